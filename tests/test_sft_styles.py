"""Supervision styles (paper Section 4, Figure 4) and the SFT training sets built from them."""
from __future__ import annotations

import json

import pytest

from finelogic.data.generators.fld import fld_paper_plan, generate_fld
from finelogic.data.generators.prontoqa import generate_prontoqa
from finelogic.data.problem import Fact, Problem
from finelogic.eval.extraction import AnswerRule, extract_answer
from finelogic.prompts import COT, build_conversation, labels_for
from finelogic.sft import STYLES, build, check, read_jsonl, training_set, write_jsonl
from finelogic.runs import supervision
from finelogic.sft.datasets import fld_plan, training_problems
from finelogic.sft.styles import StyleError, gold_steps

SHEEP_VOCABULARY = {"predicates": {"A": "tall", "B": "proud", "C": "messy", "D": "stale", "E": "quiet"},
                    "propositions": {}, "constants": {"a": "the sheep", "b": "the wasp"}}


def sheep_problem() -> Problem:
    """Depth 2, DISPROVED: stale(sheep); stale -> proud v ¬messy; proud -> ¬tall; ¬messy -> ¬tall (or-elim).

    fact2 (quiet -> tall) and fact6 (the wasp is tall) are distractors.
    """
    return Problem(
        id="sheep", dataset="fld", label="DISPROVED", depth=2,
        facts=(Fact("fact1", "if the sheep is not messy then the sheep is not tall."),
               Fact("fact2", "if the sheep is quiet then the sheep is tall."),
               Fact("fact3", "if the sheep is stale then either the sheep is proud or the sheep is not messy."),
               Fact("fact4", "the sheep is stale."),
               Fact("fact5", "if the sheep is proud then the sheep is not tall."),
               Fact("fact6", "the wasp is tall.")),
        hypothesis="the sheep is tall.",
        proof="fact4 & fact3 -> int1: either the sheep is proud or the sheep is not messy.; "
              "int1 & fact5 & fact1 -> ¬hypothesis;",
        formulas={"fact1": "¬{C}{a} -> ¬{A}{a}", "fact2": "{E}{a} -> {A}{a}",
                  "fact3": "{D}{a} -> ({B}{a} v ¬{C}{a})", "fact4": "{D}{a}", "fact5": "{B}{a} -> ¬{A}{a}",
                  "fact6": "{A}{b}", "hypothesis": "{A}{a}", "int1": "({B}{a} v ¬{C}{a})"},
        meta={"vocabulary": SHEEP_VOCABULARY, "distractors": ["fact2", "fact6"]},
    )


def sheep_unknown() -> Problem:
    """The sheep problem without ``the sheep is stale``: neither tall nor ¬tall follows."""
    full = sheep_problem()
    keep = ("fact1", "fact3", "fact5", "fact6")
    return Problem(
        id="sheep-unknown", dataset="fld", label="UNKNOWN",
        facts=tuple(Fact(f"fact{i}", full.fact(k).text) for i, k in enumerate(keep, 1)),
        hypothesis=full.hypothesis,
        formulas={**{f"fact{i}": full.formulas[k] for i, k in enumerate(keep, 1)}, "hypothesis": "{A}{a}"},
        meta={"vocabulary": SHEEP_VOCABULARY, "distractors": ["fact4"]},
    )


def polly_problem() -> Problem:
    """ProntoQA, 2 hops, PROVED: Polly is a wumpus; wumpuses are rompuses; rompuses are not earthy."""
    return Problem(
        id="polly", dataset="prontoqa", label="PROVED", depth=2,
        facts=(Fact("fact1", "Each rompus is not earthy."), Fact("fact2", "Dumpuses are earthy."),
               Fact("fact3", "Every wumpus is a rompus."), Fact("fact4", "Polly is a wumpus.")),
        hypothesis="Polly is not earthy.",
        proof="fact4 & fact3 -> int1: Polly is a rompus.; int1 & fact1 -> hypothesis;",
        formulas={"fact1": "(x): {B}x -> ¬{C}x", "fact2": "(x): {D}x -> {C}x", "fact3": "(x): {A}x -> {B}x",
                  "fact4": "{A}{a}", "int1": "{B}{a}", "hypothesis": "¬{C}{a}"},
        meta={"vocabulary": {"{A}": "wumpus", "{B}": "rompus", "{C}": "earthy", "{D}": "dumpus", "{a}": "Polly"},
              "distractor_fact": "fact2"},
    )


SHEEP_TEXT = {
    "NL": """\
Let us reason step by step.
Step 1: From fact4 and fact3, it follows that either the sheep is proud or the sheep is not messy.
Step 2: From step 1, fact5 and fact1, it follows that the sheep is not tall, which is the negation of the hypothesis.
Therefore, the hypothesis is disproved.
__DISPROVED__""",
    "Symb-Struct": """\
Let us define the symbols.
Constants:
{a} = the sheep
{b} = the wasp
Predicates:
{A}x = x is tall
{B}x = x is proud
{C}x = x is messy
{D}x = x is stale
{E}x = x is quiet
Now we translate the facts and the hypothesis into formulas.
fact1: ¬{C}{a} -> ¬{A}{a}
fact2: {E}{a} -> {A}{a}
fact3: {D}{a} -> ({B}{a} v ¬{C}{a})
fact4: {D}{a}
fact5: {B}{a} -> ¬{A}{a}
fact6: {A}{b}
hypothesis: {A}{a}
Now we reason step by step with the formulas.
fact4 & fact3 -> int1: ({B}{a} v ¬{C}{a});
int1 & fact5 & fact1 -> ¬hypothesis: ¬{A}{a};
Therefore, the hypothesis is disproved.
__DISPROVED__""",
    "Symb-Filter": """\
The facts needed are fact1, fact3, fact4 and fact5.
Let us define the symbols.
Constants:
{a} = the sheep
Predicates:
{A}x = x is tall
{B}x = x is proud
{C}x = x is messy
{D}x = x is stale
Now we translate the facts and the hypothesis into formulas.
fact1: ¬{C}{a} -> ¬{A}{a}
fact3: {D}{a} -> ({B}{a} v ¬{C}{a})
fact4: {D}{a}
fact5: {B}{a} -> ¬{A}{a}
hypothesis: {A}{a}
Now we reason step by step with the formulas.
fact4 & fact3 -> int1: ({B}{a} v ¬{C}{a});
int1 & fact5 & fact1 -> ¬hypothesis: ¬{A}{a};
Therefore, the hypothesis is disproved.
__DISPROVED__""",
    "Symb-Direct": """\
The facts and the hypothesis as formulas:
fact1: ¬{C}{a} -> ¬{A}{a}
fact2: {E}{a} -> {A}{a}
fact3: {D}{a} -> ({B}{a} v ¬{C}{a})
fact4: {D}{a}
fact5: {B}{a} -> ¬{A}{a}
fact6: {A}{b}
hypothesis: {A}{a}
Now we reason step by step with the formulas.
fact4 & fact3 -> int1: ({B}{a} v ¬{C}{a});
int1 & fact5 & fact1 -> ¬hypothesis: ¬{A}{a};
Therefore, the hypothesis is disproved.
__DISPROVED__""",
}


def failures(style: str, problem: Problem, text: str | None = None) -> list[str]:
    return [v.reason for v in check(style, problem, text) if not (v.valid and v.atomic)]


# ---- exact texts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
def test_each_style_writes_the_hand_checked_text_of_the_sheep_problem(style):
    assert build(style, sheep_problem()) == SHEEP_TEXT[style]
    assert failures(style, sheep_problem()) == []


def test_prontoqa_hops_are_split_into_instantiation_and_modus_ponens():
    assert build("NL", polly_problem()) == """\
Let us reason step by step.
Step 1: From fact3, it follows that if Polly is a wumpus then Polly is a rompus.
Step 2: From fact4 and step 1, it follows that Polly is a rompus.
Step 3: From fact1, it follows that if Polly is a rompus then Polly is not earthy.
Step 4: From step 2 and step 3, it follows that Polly is not earthy, which is the hypothesis.
Therefore, the hypothesis is proved.
__PROVED__"""
    assert build("Symb-Filter", polly_problem()) == """\
The facts needed are fact1, fact3 and fact4.
Let us define the symbols.
Constants:
{a} = Polly
Predicates:
{A}x = x is a wumpus
{B}x = x is a rompus
{C}x = x is earthy
Now we translate the facts and the hypothesis into formulas.
fact1: (x): {B}x -> ¬{C}x
fact3: (x): {A}x -> {B}x
fact4: {A}{a}
hypothesis: ¬{C}{a}
Now we reason step by step with the formulas.
fact3 -> int1: {A}{a} -> {B}{a};
fact4 & int1 -> int2: {B}{a};
fact1 -> int3: {B}{a} -> ¬{C}{a};
int2 & int3 -> hypothesis: ¬{C}{a};
Therefore, the hypothesis is proved.
__PROVED__"""
    for style in STYLES:
        assert failures(style, polly_problem()) == []


def test_unknown_texts_state_no_step_and_the_status_message():
    problem = sheep_unknown()
    assert build("Symb-Filter", problem) == """\
The facts that bear on the hypothesis are fact1, fact2 and fact3.
Let us define the symbols.
Constants:
{a} = the sheep
Predicates:
{A}x = x is tall
{B}x = x is proud
{C}x = x is messy
{D}x = x is stale
Now we translate the facts and the hypothesis into formulas.
fact1: ¬{C}{a} -> ¬{A}{a}
fact2: {D}{a} -> ({B}{a} v ¬{C}{a})
fact3: {B}{a} -> ¬{A}{a}
hypothesis: {A}{a}
No chain of steps from the facts reaches the hypothesis or its negation.
The search path has been exhausted without finding a way to either prove or disprove the hypothesis.
Therefore, the hypothesis can be neither proved nor disproved.
__UNKNOWN__"""
    assert build("NL", problem) == """\
Let us reason step by step.
No chain of steps from the facts reaches the hypothesis or its negation.
The search path has been exhausted without finding a way to either prove or disprove the hypothesis.
Therefore, the hypothesis can be neither proved nor disproved.
__UNKNOWN__"""
    for style in STYLES:
        assert failures(style, problem) == []


def test_same_problem_gives_byte_identical_text():
    problem = generate_fld(1, seed=11, depths=[6], labels=["PROVED"], progress=False)[0]
    for style in STYLES:
        first = build(style, problem)
        again = build(style, Problem.from_dict(json.loads(problem.to_json())))
        assert first.encode() == again.encode()


# ---- every step passes the symbolic judge ---------------------------------------------------------------


@pytest.fixture(scope="module")
def five_hundred() -> list[Problem]:
    """400 FLD-style problems over depths 0-15 x (PROVED, DISPROVED, UNKNOWN) and 100 ProntoQA 3-hop."""
    return (generate_fld(400, seed=2024, depths=range(0, 16), progress=False)
            + generate_prontoqa(100, seed=2024, hops=(3,)))


def test_every_built_line_of_500_problems_is_valid_and_atomic(five_hundred):
    steps = 0
    for problem in five_hundred:
        for style in STYLES:
            verdicts = check(style, problem)
            bad = [v.reason for v in verdicts if not (v.valid and v.atomic)]
            assert bad == [], f"{problem.id} {style}: {bad}"
            steps += sum("(z3); one rule:" in v.reason for v in verdicts)  # SymbolicJudge's verdict on a step
    assert steps == 4 * sum(len(gold_steps(p)) for p in five_hundred)  # every step was judged, none skipped


def test_final_label_is_extracted_from_every_style(five_hundred):
    for problem in [sheep_problem(), sheep_unknown(), polly_problem(), *five_hundred]:
        labels = labels_for(problem.dataset)
        for style in STYLES:
            text = build(style, problem)
            for policy in AnswerRule:
                assert extract_answer(text, policy, labels) == problem.label, (problem.id, style, policy)


# ---- a builder bug shows up as an invalid line ----------------------------------------------------------


@pytest.mark.parametrize("style, old, new", [
    ("Symb-Struct", "int1: ({B}{a} v ¬{C}{a});", "int1: ({B}{a} v {C}{a});"),  # wrong intermediate formula
    ("Symb-Direct", "fact4 & fact3 -> int1", "fact2 & fact3 -> int1"),  # wrong premise
    ("Symb-Struct", "fact4: {D}{a}", "fact4: {E}{a}"),  # mistranslated fact
    ("Symb-Struct", "{B}x = x is proud\n{C}x = x is messy", "{B}x = x is messy\n{C}x = x is proud"),  # definitions
    ("Symb-Filter", "{D}x = x is stale\n", ""),  # a symbol left undefined
    ("Symb-Filter", "fact4: {D}{a}\n", ""),  # a cited fact not translated
    ("Symb-Direct", "fact4 & fact3 -> int1: ({B}{a} v ¬{C}{a});\n", ""),  # a step dropped
    ("Symb-Direct", "-> ¬hypothesis: ¬{A}{a};", "-> ¬hypothesis: {A}{a};"),  # wrong hypothesis formula
    ("NL", "the sheep is proud or the sheep is not messy", "the sheep is proud or the sheep is messy"),
    ("NL", "From step 1, fact5 and fact1", "From step 1 and fact5"),  # a premise missing
    ("NL", "__DISPROVED__", "__PROVED__"),  # wrong marker
])
def test_a_corrupted_text_fails_its_check(style, old, new):
    text = SHEEP_TEXT[style]
    assert old in text
    assert failures(style, sheep_problem(), text.replace(old, new))


def test_a_text_that_applies_a_universal_rule_and_modus_ponens_in_one_step_is_valid_but_not_atomic():
    # What a builder that forgot to split ProntoQA's hops would write: fact3's instance and modus ponens in one.
    split = ("fact3 -> int1: {A}{a} -> {B}{a};\nfact4 & int1 -> int2: {B}{a};\n"
             "fact1 -> int3: {B}{a} -> ¬{C}{a};\nint2 & int3 -> hypothesis")
    merged = "fact4 & fact3 -> int1: {B}{a};\nfact1 -> int2: {B}{a} -> ¬{C}{a};\nint1 & int2 -> hypothesis"
    built = build("Symb-Direct", polly_problem())
    assert split in built
    text = built.replace(split, merged)
    verdicts = check("Symb-Direct", polly_problem(), text)
    step = next(v for v in verdicts if "fact4 & fact3 -> int1" in v.reason)
    assert step.valid is True and step.atomic is False


def test_unknown_style_lists_the_valid_ones():
    with pytest.raises(StyleError, match="Symb-Struct, Symb-Filter, Symb-Direct"):
        build("Symb", sheep_problem())


def test_a_problem_without_formulas_is_refused_by_name():
    bare = Problem(id="folio-7", dataset="folio", facts=(Fact("fact1", "All men are mortal."),),
                   hypothesis="Socrates is mortal.", label="UNKNOWN")
    with pytest.raises(StyleError, match=r"folio-7.*Symb-Direct.*no formula for fact1, hypothesis"):
        build("Symb-Direct", bare)


def test_gold_steps_renumber_intermediates_after_splitting():
    steps = gold_steps(polly_problem())
    assert [(s.premises, s.conclusion) for s in steps] == [
        (("fact3",), "int1"), (("fact4", "int1"), "int2"), (("fact1",), "int3"), (("int2", "int3"), "hypothesis")]


# ---- training sets --------------------------------------------------------------------------------------


def test_paper_sizes_are_the_papers_training_shape():
    paper = supervision.PROFILES["paper"].sizes()
    assert paper["fld_n"] + paper["prontoqa_n"] == 9500 + 3200
    assert fld_plan(paper["fld_n"], paper["fld_unknown"], paper["fld_depths"]) == fld_paper_plan("train")
    tiny = supervision.PROFILES["tiny"].sizes()  # a CPU-sized set of shallow problems: 14 FLD + 2 UNKNOWN at depths 0-1, 4 ProntoQA
    assert (tiny["fld_n"], tiny["fld_unknown"], tuple(tiny["fld_depths"]), tiny["prontoqa_n"]) == (16, 2, (0, 1), 4)
    assert tiny["prontoqa_hops"] == 3


def test_smoke_training_set_shape_and_jsonl_round_trip(tmp_path):
    smoke = supervision.PROFILES["smoke"].sizes()
    examples = training_set("Symb-Struct", training_problems(smoke, seed=0), seed=0)  # 4 FLD (1 UNKNOWN) + 2 ProntoQA
    assert len(examples) == 6
    assert sorted(e["meta"]["dataset"] for e in examples) == ["fld"] * 4 + ["prontoqa"] * 2
    assert sum(e["meta"]["label"] == "UNKNOWN" for e in examples) == 1
    assert all(e["id"].startswith("sft-") for e in examples)
    assert len({e["id"] for e in examples}) == 6
    for e in examples:
        assert e["style"] == "Symb-Struct"
        assert [m["role"] for m in e["messages"]] == ["system", "user", "assistant"]
        assert e["messages"][1]["content"].endswith("Let's think step by step.")
        assert extract_answer(e["messages"][2]["content"], labels=labels_for(e["meta"]["dataset"])) == e["meta"]["label"]
    problems = {p.id: p for p in training_problems(smoke, seed=0)}
    for e in examples:  # the accuracy evaluation's CoT prompt, then the style's text
        assert e["messages"][:2] == build_conversation(problems[e["id"]], COT)
        assert e["messages"][2]["content"] == build("Symb-Struct", problems[e["id"]])

    path = write_jsonl(examples, tmp_path / "sft" / "smoke.jsonl")
    assert read_jsonl(path) == examples
    assert [p.name for p in path.parent.iterdir()] == ["smoke.jsonl"]  # no temporary file left behind
    assert training_set("Symb-Struct", training_problems(smoke, seed=0), seed=0) == examples
    assert [e["id"] for e in training_set("NL", list(problems.values()), seed=0)] == [e["id"] for e in examples]


@pytest.mark.parametrize("style", ["Symb-Struct", "Symb-Filter", "Symb-Direct"])
def test_the_soundness_parser_and_symbolic_judge_read_symbolic_style_responses(style):
    """An SFT model that writes its style is judged like any response (Table 3's SFT rows)."""
    from finelogic.eval.judges import SymbolicJudge
    from finelogic.eval.steps import parse_steps

    problem = sheep_problem()
    steps = parse_steps(build(style, problem), problem)
    assert [s.conclusion_id for s in steps] == ["int1", "¬hypothesis"]
    verdicts = SymbolicJudge().judge_all([(s, problem) for s in steps])
    assert [(v.valid, v.atomic) for v in verdicts] == [(True, True), (True, True)]
    wrong = parse_steps(build(style, problem).replace("int1: ({B}{a} v ¬{C}{a})", "int1: ({B}{a} & ¬{C}{a})"),
                        problem)
    assert SymbolicJudge().judge_all([(s, problem) for s in wrong])[0].valid is False


def test_training_problems_are_stored_and_read_back_equal(tmp_path, monkeypatch):
    """The second call reads back the set the first stored: the same problems (and, with the row changed to
    its first three, hash and count too, those three: it is read, not drawn again)."""
    import hashlib
    import sqlite3

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    sizes = {"fld_n": 4, "fld_unknown": 1, "fld_depths": (0, 1), "prontoqa_n": 2, "prontoqa_hops": 3}
    first = training_problems(sizes, seed=0)

    def rows():
        with sqlite3.connect(tmp_path / "store.sqlite") as db:
            return db.execute("SELECT key, name, problems, count FROM datasets").fetchall()

    (key, name, text, count), = rows()
    assert name == "sft-training" and count == 6
    assert training_problems(sizes, seed=0) == first
    three = "".join(line + "\n" for line in text.splitlines()[:3])
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        db.execute("UPDATE datasets SET problems = ?, count = 3, sha256 = ? WHERE key = ?",
                   (three, hashlib.sha256(three.encode()).hexdigest(), key))
    assert training_problems(sizes, seed=0) == first[:3]
    assert len(rows()) == 1


def test_a_kept_training_set_is_read_back_not_built_and_checked_again():
    """The first call puts the style's texts and check counts in the memo; the second reads them back: the
    same examples as without a memo (and, with the kept count edited, that count: it is read, not checked)."""
    from finelogic.sft.datasets import checked_training_set

    problems = training_problems(supervision.PROFILES["smoke"].sizes(), seed=0)
    memo: dict = {}
    first = checked_training_set("Symb-Filter", problems, seed=0, memo=memo)
    assert first.examples == training_set("Symb-Filter", problems, seed=0)  # no memo: built and checked
    assert len(memo) == 1 and first.failures == () and first.lines > len(problems)
    (key, kept), = memo.items()
    assert kept["lines"] == first.lines and len(kept["texts"]) == 6
    assert checked_training_set("Symb-Filter", problems, seed=0, memo=memo) == first
    memo[key] = {**kept, "lines": 7}
    assert checked_training_set("Symb-Filter", problems, seed=0, memo=memo).lines == 7
    assert training_set("Symb-Filter", problems, seed=0, memo=memo) == first.examples
    # Another style, seed or problem set is another key.
    checked_training_set("NL", problems, seed=0, memo=memo)
    checked_training_set("Symb-Filter", problems, seed=1, memo=memo)
    checked_training_set("Symb-Filter", problems[:5], seed=0, memo=memo)
    assert len(memo) == 4


def test_logipt_traces_are_kept_and_read_back():
    """Each problem's solver trace is kept: the same examples with or without the memo, and a kept trace is
    read, not derived again (an edited kept trace comes back)."""
    from finelogic.baselines import logipt_data

    problems = training_problems(supervision.PROFILES["smoke"].sizes(), seed=0)
    memo: dict = {}
    examples = logipt_data(problems, memo=memo)
    assert examples == logipt_data(problems) and len(examples) == 6 and len(memo) == 6
    assert logipt_data(problems, memo=memo) == examples
    memo.update((key, {"trace": "kept"}) for key in memo)
    assert [e["messages"][-1]["content"] for e in logipt_data(problems, memo=memo)] == ["kept"] * 6
