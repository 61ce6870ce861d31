"""Every sentence of the book that says what the paper or the LogicMark card found, did or used names its
source, so a reader can check it against the seed.

What is scanned: every book page (``book/*.md``) and every markdown cell of every notebook
(``notebooks/*.ipynb``). Fenced code blocks, MyST directive option lines and HTML comments are dropped;
inline markup (backticks, emphasis, ``{glue:text}``/``{doc}`` roles) is unwrapped to its text. The text is
cut into sentences (at ``.``, ``!`` or ``?`` followed by a space and a capital, a bracket or a quote; at
blank lines, list items and table rows; common abbreviations such as "e.g." do not end a sentence).
Headings are skipped: "What the paper found" names a section and states nothing.

What counts as a *claim* (:data:`CLAIM`): a sentence in which

* the paper, its authors, its released code or the card is the subject of a reporting or doing verb,
  possibly after adverbs or a parenthesis ("the paper finds", "the paper itself names", "the card only
  says", "the authors trained", "the paper (Section 4) fine-tunes", "the released code scores"); the verb
  list is :data:`VERBS` (find, show, report, use, train, fine-tune, evaluate, say, define, score, serve,
  ...), in any tense;
* something is equated with the paper's or the card's ("the read-out is the paper's", "as the card
  computes it"), or a thing of theirs is named ("the paper's recipe", "the paper's setup", "the card's
  choice", "the card's items", "the paper's 203 items");
* a passive with them as agent ("reported by the card", "copied from the LogicMark card");
* "in the paper", "according to the paper/card", or the parenthetical "(the paper: ...)".

What counts as a *source* (:data:`SOURCE`), anywhere in the same sentence:

* a place in the paper: "Section 3.2", "§5.2.1", "Table 3", "Figure 4", "Appendix B.1", "abstract";
* a place in the card: ``card, "Hop Depth"`` (one of the card's section headings, :data:`CARD_SECTIONS`);
* the released code with a file: "released code: src/probing.py";
* our own choice: "(ours)", "(ours: ...)", "; ours", "ours)";
* a statement of absence about the paper or card ("the paper does not say", "the card never names",
  "the paper states no ..."): there is nothing to cite, and the sentence says so.

The table of ``book/differences.md`` is checked cell by cell as well: every row's "the paper" cell must
carry a source, since that whole column is about what the paper did.

What it cannot catch: a claim phrased without any of the trigger phrases ("Llama's symbolic styles hold up
better", with the paper only implied by the paragraph); a claim whose subject is a pronoun ("It
fine-tunes ...", "Its findings"); and whether a cited section really says what the sentence says: the
test reads that a source is given, not that it is right (that is what a second read against the seeds is
for). A sentence with two claims and one source passes. Sentence splitting is heuristic, so a source
given in the next sentence does not count, and the rare abbreviation not in :data:`ABBREVIATIONS` can
split a sentence early.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CARD_SECTIONS = ("Benchmark Results", "Task Format", "Hop Depth", "Graph Styles", "Generator",
                 "Key Config Parameters", "Design Decisions", "Dataset Format")

VERBS = (
    "find", "show", "report", "use", "train", "fine-tune", "evaluate", "say", "state", "define", "ask",
    "measure", "compute", "call", "describe", "name", "probe", "score", "compare", "judge", "generate",
    "build", "read", "run", "give", "print", "list", "note", "argue", "suggest", "claim", "conclude",
    "attribute", "hypothesise", "hypothesize", "observe", "follow", "sample", "select", "include", "count",
    "apply", "introduce", "propose", "add", "take", "keep", "set", "treat", "prompt", "serve", "balance",
    "target", "draw", "average", "weight", "normalise", "normalize", "speak", "write", "split", "test",
    "extract", "construct", "study", "exclude", "filter", "mask", "rank", "label", "bucket", "choose",
    "pick", "rely", "recommend", "provide", "present", "mention", "discuss", "examine", "explain",
    "interpret", "highlight", "cite", "release", "publish", "stratify", "tag", "spend",
)
# The forms the regular rule below does not make.
_IRREGULAR = {"find": ["found"], "show": ["shown"], "say": ["said"], "give": ["gave", "given"],
              "take": ["took", "taken"], "keep": ["kept"], "run": ["ran"], "draw": ["drew", "drawn"],
              "speak": ["spoke"], "write": ["wrote", "written"], "choose": ["chose", "chosen"],
              "spend": ["spent"], "build": ["built"], "rely": ["relies", "relied"], "tag": ["tagged"],
              "study": ["studies", "studied"], "apply": ["applies", "applied"]}


def _forms(verb: str) -> list[str]:
    """``verb`` in every tense a sentence about the paper uses (a few non-words like "readed" are harmless)."""
    stem = verb[:-1] if verb.endswith("e") else verb
    return [verb, verb + "s", verb + "es", stem + "ed", stem + "ing"] + _IRREGULAR.get(verb, [])


_VERB = "(?:" + "|".join(sorted({f for v in VERBS for f in _forms(v)}, key=len, reverse=True)) + r")\b"
# "the paper", "the paper's authors/text", "the authors", "the card", "the LogicMark card", "the dataset card";
# never our `paper` profile ("the paper profile", "a paper run").
_SUBJECT = (r"\b(?:the\s+paper(?:'s\s+(?:text|authors|prose))?(?!\s+(?:profile|run|scale|sizes?)\b)"
            r"|the\s+(?:paper's\s+)?authors|the\s+(?:LogicMark\s+|dataset\s+)?card(?:'s\s+(?:text|authors))?"
            r"|the\s+(?:paper's\s+)?released\s+(?:code|script|scorer|scripts|scorers))"
            r"(?:\s*\([^)]*\))?")
_ADVERBS = (r"(?:\s+(?:also|only|itself|themselves|then|first|never|always|instead|explicitly|further|too"
            r"|merely|just|rather|so|therefore|hence|all|both|each|already|elsewhere|again|here|there|likewise"
            r"|similarly|moreover|reportedly|simply|actually|thus))*")
CLAIM = re.compile(
    _SUBJECT + _ADVERBS + r"\s+(?:(?:does|did|do|has|had|have|is|was|were|are)\s+(?:not\s+)?)?" + _VERB
    + r"|\b(?:is|are|was|were|as|like|follows?|matches|matching)\s+(?:in\s+)?(?:the\s+)?(?:paper|card)'s\b"
    + r"|\bthe\s+(?:LogicMark\s+)?(?:paper|card)'s\s+(?:own\s+)?(?:[\w-]+\s+)?(?:choice|recipe|setup|set-up"
    + r"|definitions?|read-out|readout|probe|judge|method|metrics?|normalisation|normalization|layout|prompts?"
    + r"|decoding|sampling|findings?|claim|reason|rule|units?|configuration|test\s+sets?|data|models?|scorers?|rows"
    + r"|benchmarks|datasets|generator|items|mean|per-token|\d[\d,]*)\b"
    + r"|\b(?:in|according\s+to|per)\s+the\s+(?:LogicMark\s+)?(?:paper|card)(?!\s+profile)\b"
    + r"|\b(?:reported|described|defined|stated|given|used|named|printed|shown|copied|transcribed|taken|"
    + r"listed|made|produced|computed|scored|trained)\s+(?:by|in|from)\s+the\s+(?:LogicMark\s+)?"
    + r"(?:paper|card|authors)\b"
    + r"|\(the\s+(?:paper|card):",
    re.I,
)
SOURCE = re.compile(
    r"\bSections?\s+\d+(?:\.\d+)*|§\s*\d|\bTables?\s+\d|\bFigures?\s+\d|\bAppendi(?:x|ces)\s+[A-F]\b"
    r"|\babstract\b|\bLimitations\b"
    r"|\bcard[,:]?\s*[\"“](?:" + "|".join(CARD_SECTIONS) + r")[\"”]"
    r"|\breleased\s+code:\s*[\w./-]+\.(?:py|sh|yaml|json)\b"
    r"|\(ours\b|\bours\)|[;:]\s*ours\b"
    r"|" + _SUBJECT + r"(?:\s+\w+){0,2}?\s+(?:does\s+not|did\s+not|doesn't|never|nowhere|gives\s+no|states\s+no"
    r"|names\s+no|says\s+nothing|has\s+no|reports\s+no)\b"
    r"|\bnot\s+(?:in|from)\s+the\s+(?:paper|card)\b",
    re.I,
)

ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "et al.", "etc.", "approx.", "resp.", "Fig.", "Eq.", "No.")


def _plain(markdown: str) -> str:
    """Markdown -> text: no fenced code, directive options or comments; inline markup unwrapped."""
    lines: list[str] = []
    fence: str | None = None  # the marks of an open code block
    directives: list[str] = []  # the marks of the open ```{directive} / :::{directive} blocks
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is not None:
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = None
            continue
        mark = re.match(r"^(`{3,}|~{3,}|:{3,})(.*)$", stripped)
        if mark:
            marks, rest = mark.group(1), mark.group(2).strip()
            lines.append("")  # fences end a paragraph
            if rest.startswith("{"):
                directives.append(marks)  # a directive: its body is text
            elif not rest and directives and marks == directives[-1]:
                directives.pop()
            elif marks[0] in "`~":
                fence = marks  # a code block, with or without a language
            continue
        if re.match(r"^:[\w-]+:", stripped):
            lines.append("")  # a directive's option line
            continue
        lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", text)  # {glue:text}`x`, {doc}`x`, {cite}`x`
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.replace("`", "").replace("**", "").replace("__", " ")
    return text


def sentences(markdown: str) -> list[str]:
    """The sentences of a markdown text (see the module docstring for how it is cut)."""
    blocks: list[str] = []
    current: list[str] = []
    for line in _plain(markdown).splitlines():
        stripped = line.strip()
        starts_block = (not stripped or stripped.startswith(("|", "#", "- ", "* ", "> "))
                        or re.match(r"^\d+\.\s", stripped))
        if starts_block and current:
            blocks.append(" ".join(current))
            current = []
        if stripped.startswith("|"):
            blocks.append(stripped)  # a table row is one unit
        elif stripped.startswith("#"):
            continue  # a heading names a section; it states nothing
        elif stripped:
            current.append(stripped)
    if current:
        blocks.append(" ".join(current))
    out = []
    for block in blocks:
        protected = block
        for abbreviation in ABBREVIATIONS:
            protected = protected.replace(abbreviation, abbreviation.replace(".", "\0"))
        for part in re.split(r"(?<=[.!?])[\"”)]?\s+(?=[A-Z(\"“*_\[])", protected):
            part = part.replace("\0", ".").strip()
            if part:
                out.append(part)
    return out


def uncited_claims(markdown: str) -> list[str]:
    """The sentences of ``markdown`` that make a claim about the paper or card without a source."""
    return [s for s in sentences(markdown) if CLAIM.search(s) and not SOURCE.search(s)]


def _pages() -> dict[str, str]:
    """Every text the book shows: book pages whole, notebooks' markdown cells one by one."""
    texts = {str(path.relative_to(REPO)): path.read_text() for path in sorted((REPO / "book").glob("*.md"))}
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                texts[f"{path.relative_to(REPO)} cell {index}"] = "".join(cell["source"])
    return texts


def test_the_scan_reads_every_page_and_notebook() -> None:
    texts = _pages()
    assert {"book/index.md", "book/differences.md", "book/reproduce.md", "book/rehearsal.md"} <= set(texts)
    notebooks = {key.split(" cell ")[0] for key in texts if key.endswith(tuple(f" cell {i}" for i in range(200)))}
    assert len(notebooks) == len(list((REPO / "notebooks").glob("*.ipynb"))) >= 11
    # Enough claims are found for the test to mean something (74 at the time of writing).
    claims = [s for text in texts.values() for s in sentences(text) if CLAIM.search(s)]
    assert len(claims) > 50, len(claims)


def test_every_claim_about_the_paper_or_card_names_its_source() -> None:
    problems = [f"{where}: {sentence}" for where, text in _pages().items() for sentence in uncited_claims(text)]
    assert not problems, "claims about the paper or card without a source:\n" + "\n".join(problems)


def _paper_cells(markdown: str) -> list[tuple[str, str]]:
    """(row name, paper cell) for every body row of the table whose second header names the paper."""
    cells, in_table = [], False
    for line in markdown.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        columns = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(columns) > 1 and "the paper" in columns[1] and not in_table:
            in_table = True
            continue
        if in_table and not set(columns[0]) <= set("-: "):
            cells.append((columns[0], _plain(columns[1])))
    return cells


def test_every_paper_cell_of_the_differences_table_names_its_source() -> None:
    cells = _paper_cells((REPO / "book" / "differences.md").read_text())
    assert len(cells) > 20
    unsourced = [f"{row}: {cell}" for row, cell in cells if not SOURCE.search(cell)]
    assert not unsourced, "paper cells without a source:\n" + "\n".join(unsourced)


# ------------------------------------------------------------------ the checker itself, on planted text

@pytest.mark.parametrize("sentence", [
    "The paper finds that symbolic styles give more atomic steps.",
    "The paper itself names Pyke for Logic-LM.",
    "The read-out is the paper's: the chat template and the last layer.",
    "New tokens are capped at 32 (the paper: 3,072).",
    "The card reports its models on 5,000 items.",
    "In the paper, fine-tuning data covered depths 0-15.",
    "It is why the card uses token_mean.",
    "The authors trained on four GPUs.",
    "A vLLM server (multi-GPU, the paper's setup) answers.",
    "The probe is the paper's: standardisation and a cross-validated logistic regression.",
    "Here avg is computed as the card computes it.",
    "The LogicMark card scores the options by log-likelihood.",
])
def test_an_uncited_claim_is_flagged(sentence: str) -> None:
    assert uncited_claims(sentence) == [sentence]


@pytest.mark.parametrize("sentence", [
    "The paper finds that symbolic styles give more atomic steps (Section 5.2.2).",
    "The paper reports 203 FOLIO items (Table 1).",
    "The read-out follows Appendix B.1: the last layer's final-token state.",
    "New tokens are capped at 32 (released code: src/eval_vllm_overall.py uses 3,072).",
    "The card reports its models on 5,000 items (card, \"Benchmark Results\").",
    "The folds grouped by problem are our change (ours).",
    "The paper does not define the unit of RFI.",
    "The paper states no decoding settings.",
    "The card never says why it normalises by length.",
    "The paper profile uses the released prompts.",  # our profile, not the paper
    "Our generator writes the chain.",  # no claim about the paper at all
    "§3.2 of the paper says a step is relevant when a later step uses it.",
])
def test_a_cited_claim_or_a_non_claim_passes(sentence: str) -> None:
    assert uncited_claims(sentence) == []


def test_sentences_are_cut_at_full_stops_but_not_inside_abbreviations_or_code() -> None:
    text = ("The paper finds X, e.g. at depth 5. The card says Y (card, \"Hop Depth\").\n\n"
            "```python\nthe paper finds nothing here.\n```\n- the authors trained Z\n")
    assert sentences(text) == ["The paper finds X, e.g. at depth 5.", "The card says Y (card, \"Hop Depth\").",
                               "- the authors trained Z"]
    assert uncited_claims(text) == ["The paper finds X, e.g. at depth 5.", "- the authors trained Z"]


def test_text_after_a_directive_is_still_read() -> None:
    # A directive's closing fence must not open a code block that hides the rest of the page.
    text = "```{include} generated/timings.md\n```\n\nThe paper trains for ten epochs.\n"
    assert uncited_claims(text) == ["The paper trains for ten epochs."]
    admonition = "````{admonition} Solution\n:class: dropdown\n\nThe card says why.\n```{glue} t\n```\n````\n"
    assert uncited_claims(admonition) == ["The card says why."]


def test_a_planted_uncited_sentence_in_a_real_page_is_flagged() -> None:
    page = (REPO / "book" / "index.md").read_text()
    planted = page + "\nThe paper trains every model for ten epochs.\n"
    assert uncited_claims(page) == []
    assert uncited_claims(planted) == ["The paper trains every model for ten epochs."]


def test_a_differences_row_without_a_source_is_flagged() -> None:
    table = ("| what | the paper | ours | why |\n|---|---|---|---|\n"
             "| decoding | temperature 0.7 | greedy | bytes |\n"
             "| models | Llama (Section 5.1) | SmolLM2 | CPU |\n")
    cells = _paper_cells(table)
    assert [row for row, cell in cells if not SOURCE.search(cell)] == ["decoding"]


def test_table4_shares_are_not_of_100_problems_as_the_probing_page_says() -> None:
    """The probing page's arithmetic on Table 4 (RFI and NSD read as shares of test problems)."""
    from finelogic import paper

    table = paper.reported("table4")

    def fits(value: float, n: int) -> bool:
        return any(round(100 * k / n, 1) == value for k in range(n + 1))

    rfi = table[table.metric == "RFI"]
    nsd = table[table.metric == "NSD"]
    whole = sorted({v for v in pd_values(rfi) + pd_values(nsd) if fits(v, 100)})
    assert whole == [16.0, 32.0]
    assert [v for v in pd_values(rfi) if not fits(v, 81)] == [0.7, 9.2]
    assert [v for v in pd_values(nsd) if not fits(v, 97)] == [44.2, 43.2]
    assert set(rfi[~rfi.value.map(lambda v: fits(v, 81))].setting) == {"LogiPT"}
    assert set(nsd[~nsd.value.map(lambda v: fits(v, 97))].setting) == {"LogiPT"}
    cells = json.loads((REPO / "notebooks" / "05_probing.ipynb").read_text())["cells"]
    text = " ".join(" ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown").split())
    assert "only 16.0 and 32.0 are whole percentages" in text
    assert "Ten of its twelve RFI values are multiples of 1/81" in text
    assert "ten of its twelve NSD values multiples of 1/97" in text


def pd_values(frame) -> list[float]:
    return [float(v) for v in frame["value"]]
