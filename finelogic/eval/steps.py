"""Splitting a model's proof into steps (paper §3.2: "we extract the premises and conclusion of each step"): our
reading (:func:`parse_steps`) and the released code's (:func:`released_steps`). Each step carries the texts of its
premises as defined before it, so a judge needs only the step and the problem.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping

from finelogic.data.problem import Problem
from finelogic.logic.proof import HYPOTHESIS, NEGATED_HYPOTHESIS, VOID, ProofNotationError, ProofStep, parse_step

_MARKER = re.compile(r"__[A-Za-z]+__")
_STEP_HEADER = re.compile(r"^[ \t>*#-]*step\s*(\d+)\s*\**\s*[:.)]\**", re.I | re.M)
# ``fact1: {A}{a} -> {B}{a}``: a fact translated into a formula (symbolic styles), not a step.
_TRANSLATION = re.compile(r"^\s*(?:fact\s*\d+|hypothesis)\s*:", re.I)

#: What a natural-language step says after ``Step N:`` (the SFT-NL style writes it; :mod:`finelogic.sft.styles`).
NL_STEP = re.compile(r"^From (?P<premises>.+?), it follows that (?P<sentence>.+?)"
                     r"(?P<tail>, which is the hypothesis|, which is the negation of the hypothesis)?\.?$")
#: The tail a natural-language step adds when it concludes the hypothesis or its negation.
NL_TAIL = {HYPOTHESIS: ", which is the hypothesis", NEGATED_HYPOTHESIS: ", which is the negation of the hypothesis"}
_NL_CITATION = re.compile(r"step (\d+)|(fact\d+)")

#: The text the released code shows the judge for an id it has no text for (and for a missing conclusion).
UNKNOWN_TEXT = "???"
# The released reading's patterns (released_steps); ids keep their digits as written (``int01``).
_ANY_ID = r"(?:fact|int|assump)\s*\d+"
_RELEASED_PREMISE = re.compile(rf"\b{_ANY_ID}\b", re.I)
_RELEASED_CONCLUSION = re.compile(r"\b(int\s*\d+|assump\s*\d+|hypothesis)\s*[:.]", re.I)
_RELEASED_STEP_START = re.compile(r"^(?:step\s*)?\d+\s*[:.]", re.I | re.M)
_HYPOTHESIS_ALONE = re.compile(r"^\s*hypothesis\s*$", re.I | re.M)
# ``int1: text`` at a line start (text up to ``;``), or anywhere (text up to ``.``, ``;`` or a line break).
_LINE_DEFINITION = re.compile(rf"({_ANY_ID})\s*:\s*(.+?)(?=;|$)", re.I)
_INLINE_DEFINITION = re.compile(rf"({_ANY_ID})\s*:\s*([^.;\n]+)", re.I)
_HYPOTHESIS_INLINE = re.compile(r"hypothesis[^:\n]*:\s*(.+)", re.I)
_HYPOTHESIS_HEADING = re.compile(r"hypothesis[^:\n]*$", re.I)
_INPUT_FACT = re.compile(r"\b(fact\d+)\s*:\s*(.+)", re.I)
_INPUT_HYPOTHESIS = re.compile(r"hypothesis\s*:\s*(.+)", re.I)


@dataclass(frozen=True)
class Step:
    """One step of a model's proof; ``index`` 0-based, ``raw`` the text it was read from."""

    index: int
    raw: str
    premises: tuple[str, ...] = ()  # normalised ids as written: fact3, int1, [assump1] (discharged), void
    premise_texts: tuple[str | None, ...] = ()  # each premise's sentence as defined before this step (None: not)
    conclusion_id: str | None = None  # int2, assump1, hypothesis or ¬hypothesis; None when unparsed
    conclusion_text: str | None = None  # the text after the colon as written; None when the step wrote none
    parsed: bool = True  # False when not in FLD notation (free text); note says why
    note: str = ""
    released: bool = False  # read by released_steps

    @property
    def premise_ids(self) -> tuple[str, ...]:
        """Premise ids without the discharge brackets and without ``void``."""
        return tuple(p.strip("[]") for p in self.premises if p != VOID)

    @property
    def opens_assumption(self) -> bool:
        """``void -> assump1: ...``: introduces an assumption, applies no rule (skipped by the metrics)."""
        return self.parsed and self.premises == (VOID,)

    @property
    def concludes_assumption(self) -> bool:
        """The step's conclusion is ``assumpN`` (the released code skips such steps: not judged, not counted)."""
        return (self.conclusion_id or "").startswith("assump")

    @property
    def concludes_hypothesis(self) -> bool:
        """The step derives the hypothesis (PROVED) or its negation (DISPROVED)."""
        return self.conclusion_id in (HYPOTHESIS, NEGATED_HYPOTHESIS)

    def format(self) -> str:
        """The step in canonical FLD notation (the raw text for an unparsed step)."""
        return ProofStep(self.premises, self.conclusion_id, self.conclusion_text).format() if self.parsed else self.raw


def _parse_fld_step(index: int, text: str) -> Step:
    """One ``premises -> conclusion: text`` step (unparsed, with a note, when it is not one)."""
    raw = text.strip()
    try:
        step = parse_step(raw)
    except ProofNotationError as error:
        return Step(index, raw, error.premises, parsed=False, note=error.note)
    return Step(index, raw, step.premises, conclusion_id=step.conclusion, conclusion_text=step.text)


def read_nl_step(index: int, number: int, block: str) -> Step:
    """A ``Step N:`` block whose first line is a natural-language step (:data:`NL_STEP`) as the step it
    states; any other block is one unparseable step."""
    line = block.split("\n")[0].strip()
    m = NL_STEP.match(line)
    if m is None:
        return Step(index, block, parsed=False, note="no FLD step notation in the block")
    premises = []
    for cited in re.split(r", | and ", m["premises"]):
        ref = _NL_CITATION.fullmatch(cited.strip())
        if ref is None:
            return Step(index, line, parsed=False, note=f"cites {cited!r}, not a fact or a step")
        premises.append(f"int{ref[1]}" if ref[1] else ref[2])
    conclusion = {tail: key for key, tail in NL_TAIL.items()}.get(m["tail"] or "", f"int{number}")
    return Step(index, line, tuple(premises), conclusion_id=conclusion, conclusion_text=m["sentence"])


def split_steps(response: str) -> list[Step]:
    """The steps of ``response``, premise texts not yet resolved, read in the first way that applies: ``Step N:``
    blocks (each one step: its first line with ``->``, else :func:`read_nl_step`); FLD notation (pieces between
    ``;`` and line breaks with ``->``, read by :func:`finelogic.logic.proof.parse_step`); else free text, one
    unparseable step (none when empty). Markers such as ``__PROVED__`` are ignored."""
    text = _MARKER.sub("\n", response or "")
    headers = list(_STEP_HEADER.finditer(text))
    if headers:
        steps = []
        for k, header in enumerate(headers):
            end = headers[k + 1].start() if k + 1 < len(headers) else len(text)
            block = text[header.end():end].strip()
            line = next((ln for ln in re.split(r"[;\n]", block) if "->" in ln or "→" in ln), None)
            if line is None:
                steps.append(read_nl_step(k, int(header[1]), block))
            else:
                steps.append(_parse_fld_step(k, line))
        return steps
    if "->" in text or "→" in text:
        pieces = [p for p in re.split(r"[;\n]", text) if ("->" in p or "→" in p) and not _TRANSLATION.match(p)]
        return [_parse_fld_step(k, p) for k, p in enumerate(pieces)]
    text = text.strip()
    return [Step(0, text, parsed=False, note="free text: no FLD step notation")] if text else []


def problem_reference(problem: Problem) -> dict[str, str]:
    """The ids a response may cite before defining anything: the facts and the (negated) hypothesis."""
    reference = {f.id: f.text for f in problem.facts}
    reference[HYPOTHESIS] = problem.hypothesis
    reference[NEGATED_HYPOTHESIS] = negated_hypothesis_text(problem)
    return reference


def problem_formulas(problem: Problem) -> dict:
    """The same ids' formulas: ``problem.formulas`` parsed, and ``¬hypothesis`` the negated hypothesis."""
    from finelogic.logic import negate, parse_formula

    formulas = {k: parse_formula(v) for k, v in problem.formulas.items()}
    formulas[NEGATED_HYPOTHESIS] = negate(formulas[HYPOTHESIS])
    return formulas


def parse_steps(response: str, problem: Problem) -> list[Step]:
    """Paper §3.2 step extraction: :func:`split_steps`, each premise resolved to the problem's fact or the latest
    earlier step concluding that id (None for an id defined later or never: the paper code's "reference
    dictionary")."""
    reference = problem_reference(problem)
    out = []
    for step in split_steps(response):
        if step.parsed:
            texts = tuple(reference.get(p) for p in step.premise_ids) if step.premises != (VOID,) else ()
            step = Step(step.index, step.raw, step.premises, texts, step.conclusion_id, step.conclusion_text)
            if step.conclusion_id not in (HYPOTHESIS, NEGATED_HYPOTHESIS) and step.conclusion_text:
                reference[step.conclusion_id] = step.conclusion_text
        out.append(step)
    return out


def negated_hypothesis_text(problem: Problem) -> str:
    """The sentence ``¬hypothesis`` stands for: rendered from the formula when the problem has a template
    vocabulary, else ``it is not the case that <hypothesis>``."""
    from finelogic.data.generators.nl import render_sentence
    from finelogic.logic import negate, parse_formula

    vocabulary = template_vocabulary(problem)
    formula = problem.formulas.get(HYPOTHESIS)
    if vocabulary is not None and formula:
        try:
            return render_sentence(negate(parse_formula(formula)), vocabulary)
        except (KeyError, ValueError):
            pass
    return "it is not the case that " + problem.hypothesis.strip().rstrip(".") + "."


def template_vocabulary(problem: Problem):
    """The problem's :class:`~finelogic.data.generators.nl.Vocabulary` when it uses the template grammar, else
    None; one cached object per distinct vocabulary."""
    raw = problem.meta.get("vocabulary")
    if not isinstance(raw, Mapping) or not raw or set(raw) - {"predicates", "propositions", "constants"}:
        return None
    try:
        return _vocabulary(tuple((kind, tuple(dict(table).items())) for kind, table in sorted(raw.items())))
    except ValueError:
        return None


@functools.lru_cache(maxsize=65536)  # one per problem
def _vocabulary(tables: tuple):
    from finelogic.data.generators.nl import Vocabulary

    return Vocabulary.from_dict({kind: dict(table) for kind, table in tables})


# --- The released code's reading (released)


def _released_id(text: str) -> str:
    return text.lower().replace(" ", "")  # only spaces: the released code keeps tabs and leading zeros


def _released_hypothesis(response: str) -> str | None:
    """The first ``hypothesis...: text`` (text to the line's end, maybe on the next line), else the line
    after a ``hypothesis...`` heading line; None when there is none or it is empty."""
    inline = _HYPOTHESIS_INLINE.search(response)
    if inline:
        return inline.group(1).strip() or None
    lines = response.splitlines()
    for line, following in zip(lines, lines[1:]):
        if _HYPOTHESIS_HEADING.match(line.strip()):
            return following.strip() or None
    return None


@functools.lru_cache(maxsize=65536)
def _released_problem_texts(text: str) -> dict[str, str]:
    """Facts (``factN:`` at the start of a piece) and the hypothesis of the problem's input, cut at ``.`` and
    ``;`` as the released code does."""
    text = text.strip()
    if text.lower().startswith("facts:"):
        text = text[len("facts:"):].lstrip()
    if text.startswith(","):
        text = text[1:].lstrip()
    found: dict[str, str] = {}
    for piece in re.split(r"[.;]", text):
        piece = piece.strip()
        if (fact := _INPUT_FACT.match(piece)):
            found[fact.group(1).lower()] = fact.group(2).strip()
        elif (hypothesis := _INPUT_HYPOTHESIS.search(piece)):
            found[HYPOTHESIS] = hypothesis.group(1).strip()
    return found


def released_reference(response: str, problem: Problem) -> dict[str, str]:
    """The released code's id -> text reference of one response, in its order of precedence: ``id: text`` at a
    line start (text up to ``;``; a later line wins); the response's ``hypothesis``; only when no ``factN:`` line
    is defined, the facts and hypothesis of the item's ``input`` (so a response restating one fact leaves every
    other ``???``); only when no ``intN``/``assumpN`` is, every ``id: text`` anywhere, never overwriting."""
    reference: dict[str, str] = {}
    for line in response.splitlines():
        if (definition := _LINE_DEFINITION.match(line.strip())):
            reference[_released_id(definition.group(1))] = definition.group(2).strip()
    if (hypothesis := _released_hypothesis(response)):
        reference[HYPOTHESIS] = hypothesis
    if not any(k.startswith("fact") for k in reference):
        given = problem.meta.get("input") if problem.meta else None
        given = given or f"Facts: {problem.facts_text}\nHypothesis: {problem.hypothesis}"
        reference.update(_released_problem_texts(given))  # update copies: the cached dict stays as it was
    if not any(k.startswith(("int", "assump")) for k in reference):
        for definition in _INLINE_DEFINITION.finditer(response):
            reference.setdefault(_released_id(definition.group(1)), definition.group(2).strip())
    return reference


def _released_blocks(text: str) -> tuple[list[str], str]:
    """The released code's step blocks and how they were found: ``numbered``, ``split`` (parts with an inline
    conclusion) or ``whole`` (no conclusion)."""
    starts = [m.start() for m in _RELEASED_STEP_START.finditer(text)]
    if starts:
        return [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)])], "numbered"
    for delimiter in (";", "\n", "."):
        parts = [p.strip() for p in text.split(delimiter) if p.strip()]
        if len(parts) > 1:
            break
    else:
        parts = [text.strip()]
    with_conclusion = [p for p in parts if _RELEASED_CONCLUSION.search(p)]
    return (with_conclusion, "split") if with_conclusion else ([text.strip()], "whole")


def _released_conclusion(block: str, how: str) -> str | None:
    """The block's first inline conclusion id; in ``Step N:`` blocks also a line saying just ``hypothesis``."""
    if how == "whole":
        return None
    if (inline := _RELEASED_CONCLUSION.search(block)):
        return _released_id(inline.group(1))
    return HYPOTHESIS if how == "numbered" and _HYPOTHESIS_ALONE.search(block) else None


def released_steps(response: str, problem: Problem) -> list[Step]:
    """The steps of ``response`` as the released ``src/eval_step.py`` reads them (``book/released-code.md``,
    "Soundness details of the released code"): the blocks starting at a line ``Step N:`` / ``N.`` / ``N:``, else the
    parts (cut at ``;``, else line breaks, else periods) with an inline conclusion (``intN``, ``assumpN`` or
    ``hypothesis`` then ``:`` or ``.``), else the whole text as one step with no conclusion (judged against ``???``).
    The conclusion is the block's first such id, the premises every other id in it, sorted (the released set order
    is not stable); texts from :func:`released_reference`."""
    text = response or ""
    reference = released_reference(text, problem)
    blocks, how = _released_blocks(text)
    steps = []
    for index, block in enumerate(blocks):
        conclusion = _released_conclusion(block, how)
        ids = {_released_id(i) for i in _RELEASED_PREMISE.findall(block)} - {conclusion}
        premises = tuple(sorted(ids))
        steps.append(Step(
            index, block, premises, tuple(reference.get(p, UNKNOWN_TEXT) for p in premises),
            conclusion_id=conclusion,
            conclusion_text=reference.get(conclusion, UNKNOWN_TEXT) if conclusion else UNKNOWN_TEXT,
            note="" if conclusion else "no conclusion id: judged against ???, relevant (released code)",
            released=True))
    return steps


# --- Steps kept in a memo (JSON)


def step_to_json(step: Step) -> list:
    """``step`` as a JSON list (:func:`step_from_json` reads it back equal)."""
    return [step.index, step.raw, list(step.premises), list(step.premise_texts), step.conclusion_id,
            step.conclusion_text, step.parsed, step.note, step.released]


def step_json_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a :func:`step_to_json` list (None: nothing), checked by JSON type."""
    if type(value) is not list or len(value) != 9:
        return f"a step must be a list of 9 fields, not {str(value)[:60]}"
    index, raw, premises, texts, conclusion_id, conclusion_text, parsed, note, released = value
    if type(index) is not int or type(raw) is not str or type(note) is not str:
        return "a step's index must be a whole number, its raw text and note strings"
    if type(premises) is not list or any(type(p) is not str for p in premises):
        return "a step's premises must be a list of strings"
    if type(texts) is not list or any(t is not None and type(t) is not str for t in texts):
        return "a step's premise texts must be a string or null per premise"
    if any(v is not None and type(v) is not str for v in (conclusion_id, conclusion_text)):
        return "a step's conclusion id and text must be strings or null"
    if type(parsed) is not bool or type(released) is not bool:
        return "a step's 'parsed' and 'released' must be true or false"
    return None


def step_from_json(value: list) -> Step:
    index, raw, premises, texts, conclusion_id, conclusion_text, parsed, note, released = value
    return Step(index, raw, tuple(premises), tuple(texts), conclusion_id, conclusion_text, parsed, note, released)
