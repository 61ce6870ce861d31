"""Stepwise soundness (paper §3.2): step parsing, relevance under both policies, Table 3 aggregation."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from finelogic.data.problem import Fact, Problem
from finelogic.eval.judges import SymbolicJudge
from finelogic.eval.relevance import relevance
from finelogic.eval.soundness import judge_responses, sample_soundness, soundness_table
from finelogic.eval.steps import Step, parse_steps, problem_reference, split_steps


def dog_problem() -> Problem:
    """red(dog); red -> big; big -> calm; a distractor about the cat. Hypothesis: the dog is calm."""
    return Problem(
        id="dog", dataset="fld", label="PROVED", depth=2,
        facts=(Fact("fact1", "the dog is red."), Fact("fact2", "if the dog is red then the dog is big."),
               Fact("fact3", "if the dog is big then the dog is calm."), Fact("fact4", "the cat is red.")),
        hypothesis="the dog is calm.",
        proof="fact1 & fact2 -> int1: the dog is big.; int1 & fact3 -> hypothesis;",
        formulas={"fact1": "{A}{a}", "fact2": "{A}{a} -> {B}{a}", "fact3": "{B}{a} -> {C}{a}",
                  "fact4": "{A}{b}", "hypothesis": "{C}{a}"},
        meta={"vocabulary": {"predicates": {"A": "red", "B": "big", "C": "calm"}, "propositions": {},
                             "constants": {"a": "the dog", "b": "the cat"}}},
    )


def shape(steps: list[Step]) -> list[tuple]:
    return [(s.premises, s.conclusion_id, s.conclusion_text) if s.parsed else ("unparsed",) for s in steps]


# ---- parsing -------------------------------------------------------------------------------------------

GOLD = "fact1 & fact2 -> int1: the dog is big.; int1 & fact3 -> hypothesis;"


@pytest.mark.parametrize("response, expected", [
    pytest.param(GOLD, [(("fact1", "fact2"), "int1", "the dog is big."), (("int1", "fact3"), "hypothesis", None)],
                 id="fld-gold"),
    pytest.param("fact1&fact2->int1:the dog is big.;int1&fact3->hypothesis",
                 [(("fact1", "fact2"), "int1", "the dog is big."), (("int1", "fact3"), "hypothesis", None)],
                 id="no-spaces-no-final-semicolon"),
    pytest.param("  Fact1  &  fact 2 ->  INT 1 :  the dog is big. ;\n int1 & fact3 -> hypothesis ;  __PROVED__",
                 [(("fact1", "fact2"), "int1", "the dog is big."), (("int1", "fact3"), "hypothesis", None)],
                 id="extra-spaces-case-marker"),
    pytest.param("fact1 & fact2 -> int1: the dog is big.\nint1 & fact3 -> hypothesis\n\n__PROVED__",
                 [(("fact1", "fact2"), "int1", "the dog is big."), (("int1", "fact3"), "hypothesis", None)],
                 id="newlines-instead-of-semicolons"),
    pytest.param("fact4 -> ¬hypothesis; __DISPROVED__", [(("fact4",), "¬hypothesis", None)], id="negated-hypothesis"),
    pytest.param("fact4 -> not hypothesis: the dog is not calm.", [(("fact4",), "¬hypothesis", "the dog is not calm.")],
                 id="not-hypothesis-with-text"),
    pytest.param("void -> assump1: the dog is big.; [assump1] & fact3 -> int1: the dog is calm.;",
                 [(("void",), "assump1", "the dog is big."), (("[assump1]", "fact3"), "int1", "the dog is calm.")],
                 id="assumption"),
    pytest.param("Step 1: fact1 & fact2 -> int1: the dog is big.\nThis is modus ponens.\n"
                 "Step 2: int1 & fact3 -> hypothesis\n__PROVED__",
                 [(("fact1", "fact2"), "int1", "the dog is big."), (("int1", "fact3"), "hypothesis", None)],
                 id="step-blocks-with-commentary"),
    pytest.param("**Step 1:** The dog is red, so it is big.\n**Step 2:** int1 & fact3 → hypothesis",
                 [("unparsed",), (("int1", "fact3"), "hypothesis", None)], id="step-blocks-prose-and-arrow"),
    pytest.param("The dog is red, hence big, hence calm. __PROVED__", [("unparsed",)], id="free-text"),
    pytest.param("", [], id="empty"),
    pytest.param("__UNKNOWN__", [], id="marker-only"),
    pytest.param("Let me see.\n1. fact1 & fact2 -> int1: the dog is big.\n2. int1 and fact3 -> hypothesis\nSo it is proved.",
                 [(("fact1", "fact2"), "int1", "the dog is big."), (("int1", "fact3"), "hypothesis", None)],
                 id="numbered-list-and-prose-around"),
    pytest.param("the dog is red & fact2 -> int1: the dog is big.", [("unparsed",)], id="sentence-as-premise"),
    pytest.param("fact1 & fact2 -> the dog is big.", [("unparsed",)], id="no-conclusion-id"),
    pytest.param("fact1 & fact2 -> int1. the dog is big", [(("fact1", "fact2"), "int1", "the dog is big")],
                 id="period-for-colon"),
    pytest.param("fact1 & fact2 -> int1: the dog is big. int1 & fact3 -> hypothesis", [("unparsed",)],
                 id="two-steps-run-together"),
])
def test_parse_steps_reads_every_notation(response, expected):
    assert shape(parse_steps(response, dog_problem())) == expected


def test_unparsed_steps_say_why():
    (step,) = split_steps("fact1 & fact2 -> the dog is big.")
    assert not step.parsed and step.note == "conclusion is not an id: 'the dog is big.'"


def test_premise_texts_come_from_facts_and_earlier_definitions():
    steps = parse_steps("int1 & fact3 -> int2: the dog is calm.; fact1 & fact2 -> int1: the dog is big.; "
                        "int1 & fact3 -> hypothesis;", dog_problem())
    assert steps[0].premise_texts == (None, "if the dog is big then the dog is calm.")  # int1 not yet defined
    assert steps[2].premise_texts == ("the dog is big.", "if the dog is big then the dog is calm.")


def test_problem_reference_maps_ids_to_sentences():
    problem = dog_problem()
    reference = problem_reference(problem)
    assert reference["fact4"] == "the cat is red."
    assert reference["hypothesis"] == "the dog is calm."
    assert reference["¬hypothesis"] == "the dog is not calm."  # rendered from the negated formula


def test_step_format_is_canonical_fld():
    (step,) = parse_steps("Fact1&FACT 2->int 1 :the dog is big.", dog_problem())
    assert step.format() == "fact1 & fact2 -> int1: the dog is big."


# ---- relevance -------------------------------------------------------------------------------------------

def rel(response: str, policy: str) -> tuple:
    return relevance(parse_steps(response, dog_problem()), policy)


def test_relevance_propagates_back_from_hypothesis():
    assert rel(GOLD, "principled") == (True, True)


def test_released_code_drops_colonless_hypothesis_step_and_its_ints_look_irrelevant():
    assert rel(GOLD, "released") == (False, None)


def test_released_code_never_counts_a_parsed_final_step_relevant():
    response = "fact1 & fact2 -> int1: the dog is big.; int1 & fact3 -> hypothesis: the dog is calm.;"
    assert rel(response, "principled") == (True, True)
    assert rel(response, "released") == (True, False)


def test_a_redundant_step_is_irrelevant_under_both_policies():
    response = ("fact1 & fact2 -> int1: the dog is big.; fact4 -> int2: the cat is red.; "
                "int1 & fact3 -> hypothesis: the dog is calm.;")
    assert rel(response, "principled") == (True, False, True)
    assert rel(response, "released") == (True, False, False)


def test_a_cited_step_off_the_path_to_the_hypothesis_is_relevant_only_under_compat():
    # int2 is cited by int3, but int3 leads nowhere: the chain int2 -> int3 is a dead end.
    response = ("fact1 & fact2 -> int1: the dog is big.; fact4 -> int2: the cat is red.; "
                "int2 -> int3: the cat is red.; int1 & fact3 -> hypothesis: the dog is calm.;")
    assert rel(response, "principled") == (True, False, False, True)
    assert rel(response, "released") == (True, True, False, False)


def test_no_step_reaches_the_hypothesis_so_none_is_relevant():
    assert rel("fact1 & fact2 -> int1: the dog is big.", "principled") == (False,)


def test_assumption_openings_are_not_counted():
    response = "void -> assump1: the dog is big.; [assump1] & fact3 -> int1: the dog is calm.; int1 -> hypothesis;"
    assert rel(response, "principled") == (None, True, True)
    assert rel(response, "released") == (None, False, None)


def test_a_redefined_id_makes_the_shadowed_definition_irrelevant():
    response = ("fact4 -> int1: the cat is red.; fact1 & fact2 -> int1: the dog is big.; "
                "int1 & fact3 -> hypothesis;")
    assert rel(response, "principled") == (False, True, True)


def test_compat_counts_unparsed_steps_relevant():
    assert rel("The dog is calm.", "released") == (True,)
    assert rel("The dog is calm.", "principled") == (False,)


def test_unknown_policy_is_an_error():
    with pytest.raises(ValueError, match="released"):
        rel(GOLD, "lenient")


# ---- aggregation ----------------------------------------------------------------------------------------

RESPONSES = [
    GOLD,  # all valid, atomic, relevant (principled)
    "fact1 & fact2 & fact3 -> hypothesis: the dog is calm.",  # valid, not atomic (two rules merged)
    "fact4 & fact2 -> int1: the dog is big.; int1 & fact3 -> hypothesis;",  # step 1 invalid
    "fact1 & fact2 -> int1: the dog is big.; fact4 -> int2: the cat is red.; int1 & fact3 -> hypothesis;",  # redundant
    "I think the dog is calm. __PROVED__",  # free text: judge undecided
    "",  # no steps
]


@pytest.fixture(scope="module")
def judged() -> pd.DataFrame:
    problem = dog_problem()
    records = pd.DataFrame({"id": ["dog"] * len(RESPONSES), "response": RESPONSES, "model": "m",
                            "setting": "Few-shot", "depth_bucket": ["0-3"] * 3 + ["4-7"] * 3})
    return judge_responses(records, {"dog": problem}, SymbolicJudge())


def test_sample_status_and_metrics(judged):
    samples = sample_soundness(judged).set_index("sample")
    assert samples["status"].tolist() == ["scored"] * 4 + ["undecided", "no_steps"]
    assert samples.loc[:3, "all_valid"].tolist() == [True, True, False, True]
    assert samples.loc[:3, "all_atomic"].tolist() == [True, False, False, True]
    assert samples.loc[:3, "all_relevant"].tolist() == [True, True, True, False]


def test_soundness_table_counts_exclusions_and_gives_wilson_intervals(judged):
    row = soundness_table(judged).iloc[0]
    assert (row.samples, row.scored, row.no_steps, row.undecided) == (6, 4, 1, 1)
    assert row.all_valid == 0.75 and row.all_atomic == 0.5 and row.all_relevant == 0.75
    assert (round(row.all_valid_low, 3), round(row.all_valid_high, 3)) == (0.301, 0.954)
    # step level: 2 + 1 + 2 + 3 counted steps judged, plus the free-text one undecided
    assert (row.steps, row.undecided_steps) == (9, 1)
    assert row.valid_rate == 7 / 8 and row.atomic_rate == 6 / 8 and row.relevant_rate == 7 / 8


def test_compat_policy_drops_the_colonless_hypothesis_steps(judged):
    row = soundness_table(judged, policy="released").iloc[0]
    # GOLD, the invalid one and the redundant one each lose their final step; every remaining final step
    # is "not relevant", so no sample is all-relevant.
    assert row.steps == 1 + 1 + 1 + 2 + 1
    assert row.all_relevant == 0.0
    assert row.all_valid == 0.75  # the invalid step of sample 2 is still counted


def test_soundness_table_by_depth_bucket(judged):
    table = soundness_table(judged, by=("model", "depth_bucket")).set_index("depth_bucket")
    assert table.loc["0-3", "scored"] == 3 and table.loc["0-3", "all_atomic"] == pytest.approx(1 / 3)
    assert table.loc["4-7", ["scored", "undecided", "no_steps"]].tolist() == [1, 1, 1]
    assert table.loc["4-7", "all_relevant"] == 0.0


def test_empty_group_gives_nan_not_a_crash(judged):
    only_excluded = judged[judged["sample"] >= 4]
    row = soundness_table(only_excluded).iloc[0]
    assert row.scored == 0 and math.isnan(row.all_valid)


def test_no_responses_give_an_empty_table():
    steps = judge_responses(pd.DataFrame(columns=["id", "response"]), {}, SymbolicJudge())
    table = soundness_table(steps)
    assert table.empty and {"model", "all_valid", "scored"} <= set(table.columns)


# ---- the notebook family's run (finelogic.runs.soundness) ------------------------------------------------

class ScriptedJudgeModel:
    """A judge model that replies ``true`` to every prompt and counts its prompts."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, conversations, config=None):
        self.prompts += [c[-1]["content"] for c in conversations]
        return ["true" for _ in conversations]


@pytest.fixture()
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def test_soundness_without_an_accuracy_run_names_the_command_that_makes_it(results):
    from finelogic.runs import soundness
    from finelogic.runs.upstream import UpstreamMissing

    # Never a quiet run of the profile's default models instead (the accuracy run is the upstream run).
    with pytest.raises(UpstreamMissing, match=r"no accuracy run in .*smoke/accuracy; make it with "
                                              r"`finelogic run --profile smoke --family accuracy`"):
        soundness.run("smoke", seed=0)


def no_responses(profile: str = "smoke"):
    """An accuracy run of ``profile`` that wrote no records: a soundness run handed it judges the gold proofs of
    its FLD test set only."""
    from finelogic.runs import accuracy
    from finelogic.runs.provenance import Provenance

    return accuracy.AccuracyRun(Provenance(accuracy.FAMILY, profile, 0, settings=accuracy.resolved_config(profile, {})))


def test_smoke_soundness_run_that_judges_no_responses_judges_gold_proofs_only(results):
    from finelogic.runs import soundness

    run = soundness.run("smoke", seed=0, accuracy_run=no_responses())
    assert run.steps.empty and run.source == "the accuracy run handed in" and run.judge == "symbolic"
    # smoke's 6 FLD items: the 4 PROVED/DISPROVED ones have gold proofs, every gold step sound
    assert run.gold_steps["sample"].nunique() == 4
    assert run.gold_steps["valid"].all() and run.gold_steps["atomic"].all()
    assert run.labels.set_index("kind")["n"].to_dict() == {"gold": 13, "merged": 6, "swapped_premise": 12,
                                                           "negated_conclusion": 13}
    assert run.quality["judge"].tolist() == ["symbolic", "symbolic"]  # smoke: no LLM judge
    assert run.quality["accuracy"].tolist() == [1.0, 1.0]
    assert run.example_problem is not None and len(run.example) >= 3
    assert run.provenance.model_calls == 0 and run.provenance.models == ()

    run.write()
    back = soundness.SoundnessRun.read(results / "smoke" / "soundness")
    assert back.source == run.source and back.gold_steps["valid"].tolist() == run.gold_steps["valid"].tolist()


def test_the_llm_judge_is_a_handed_in_backend_scored_on_a_seeded_sample(results):
    from finelogic.runs import soundness

    model = ScriptedJudgeModel()
    run = soundness.run("smoke", seed=0, accuracy_run=no_responses(), backends={"embedded": model}, llm_judge="embedded", llm_quality_steps=4)
    llm = run.quality[run.quality["judge"] == "LLM (SmolLM2-135M-Instruct)"].set_index("criterion")
    assert llm.loc["valid", "n"] == 4 and llm.loc["valid", "undecided"] == 0
    assert llm.loc["valid", "recall"] == 1.0  # "true" to everything: every valid step found
    # 4 validity prompts, then 4 atomicity prompts (every step called valid)
    assert len(model.prompts) == 8 and model.prompts[0].endswith("Answer true or false only.")
    assert run.provenance.models == ("SmolLM2-135M-Instruct",)


def test_hybrid_judge_reads_the_accuracy_runs_records_and_asks_the_llm_only_what_z3_cannot(results):
    from finelogic.data.suites import evaluation_sets
    from finelogic.runs import accuracy as accuracy_config
    from finelogic.runs import soundness
    from finelogic.runs.accuracy import AccuracyRun
    from finelogic.runs.provenance import Provenance

    fld = next(s for s in evaluation_sets(accuracy_config.PROFILES["smoke"], seed=0) if s.name == "fld")
    proved = [p for p in fld.problems if p.proof]
    records = pd.DataFrame({"id": [p.id for p in proved], "dataset": "fld", "model": "m", "setting": "CoT",
                            "depth_bucket": "0-3",
                            "response": [proved[0].proof, *("fact1 -> int1: the moon is made of cheese." for _ in proved[1:])]})
    made = AccuracyRun(Provenance("accuracy", "smoke", 0), records=records, eval_sets=(fld,))
    model = ScriptedJudgeModel()
    run = soundness.run("smoke", seed=0, accuracy_run=made, backends={"embedded": model}, judge="hybrid",
                        llm_judge="embedded", llm_quality_steps=0)
    assert run.source == "the accuracy run handed in"
    assert run.steps["sample"].nunique() == len(proved)
    first = run.steps[run.steps["sample"] == 0]
    assert (first["decided_by"] == "symbolic").all()  # a gold proof: z3 decides every step
    # a sentence outside the generator's grammar: z3 cannot read it, the LLM judge is asked (validity,
    # then atomicity, since it says "true")
    rest = run.steps[run.steps["sample"] > 0]
    assert (rest["decided_by"] == "llm").all() and rest["valid"].all()
    assert len(model.prompts) == 2 * (len(proved) - 1) and "the moon is made of cheese" in model.prompts[0]
    assert run.quality["judge"].unique().tolist() == ["symbolic"]  # llm_quality_steps=0: the LLM is not scored


def test_soundness_page_shows_the_gold_row_beside_the_papers_table(results):
    from finelogic.book import soundness as page
    from finelogic.runs import soundness

    run = soundness.run("smoke", seed=0, accuracy_run=no_responses())
    table = page.table3_side_by_side(run)
    gold = table.loc[("ours", "gold proofs (sanity check)", "gold")]
    assert (gold["all_valid"], gold["all_relevant"], gold["all_atomic"]) == (100.0, 100.0, 100.0)
    assert gold["all_relevant (released)"] == 0.0 and gold["scored / samples"] == "4 / 4"
    assert "paper" in table.index.get_level_values("source")
    assert page.scored_share(run) == "none (no model responses in this run)"
    assert page.symbolic_accuracy(run) == "100.0%"
    assert page.one_response(run, "04_soundness.ipynb")[0].data == "No model responses in this run."


# ---- released: the released src/eval_step.py --------------------------------------------------
# Every expectation below was worked out by hand from reading the released code, then checked by running
# the released file itself (stubbed transport, same stub judge) beside ours in a scratch folder outside
# the repository: all agree.

class WordsJudge:
    """The stub judge model: validity "true" iff every word of the conclusion's text (after ``id: ``; the
    bare ``???`` of a step without a conclusion) occurs in the premises' texts; atomicity "true" iff at
    most two premises. Records every prompt."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    @staticmethod
    def reply(prompt: str) -> str:
        import re

        head, _, rest = prompt.partition("\nConclusion:\n")
        premises = [p for p in head.removeprefix("Premises:\n").split("\n") if p]
        conclusion, _, question = rest.rpartition("\n")
        if "atomic" in question:
            return "true" if len(premises) <= 2 else "false"
        words = set(re.findall(r"[a-z⊥?]+", " ".join(p.split(": ", 1)[-1] for p in premises).lower()))
        said = re.findall(r"[a-z⊥?]+", conclusion.split(": ", 1)[-1].lower())
        return "true" if all(w in words for w in said) else "false"

    def generate(self, conversations, config=None):
        self.prompts += [c[-1]["content"] for c in conversations]
        return [self.reply(c[-1]["content"]) for c in conversations]


def compat_rows(response: str, problem: Problem | None = None, backend=None) -> pd.DataFrame:
    from finelogic.eval.judges import LLMJudge

    problem = problem or dog_problem()
    records = pd.DataFrame({"id": [problem.id], "response": [response]})
    return judge_responses(records, {problem.id: problem}, LLMJudge(backend or WordsJudge()),
                           policy="released")


def compat_outcome(response: str, problem: Problem | None = None) -> tuple[list, tuple | None]:
    """Per step (valid, relevant, atomic), None for a skipped step; the sample flags (all_valid,
    all_relevant, all_atomic), None when the sample has no counted step."""
    rows = compat_rows(response, problem)
    steps = [None if pd.isna(r.relevant) else (bool(r.valid), bool(r.relevant), bool(r.atomic))
             for r in rows.itertuples()]
    sample = sample_soundness(rows, "released").iloc[0]
    flags = None if sample.status == "no_steps" else (sample.all_valid, sample.all_relevant, sample.all_atomic)
    return steps, flags


def input_problem(text: str) -> Problem:
    """The dog problem carrying a paper-file ``input`` text (what the released code reads facts from)."""
    base = dog_problem()
    return Problem(id="dog", dataset="fld", label="PROVED", facts=base.facts, hypothesis=base.hypothesis,
                   meta={"input": text})


T, F = True, False
S2 = "fact1 & fact2 -> int1: the dog is big; int1 & fact3 -> hypothesis: the dog is calm"
PAPER_INPUT_NO_PERIODS = ("Fact1: the dog is red\nFact2: if the dog is red then the dog is big\n"
                          "Hypothesis: the dog is calm")
MULTI_LOGIEVAL_INPUT = "Fact 1: the dog is red. Fact 2: if the dog is red then the dog is big.\nQuestion: calm?"

COMPAT_CASES = [
    # (id, response, problem input or None, per-step (valid, relevant, atomic) / None, flags)
    ("gold-colonless-hypothesis-step-dropped", GOLD, None, [(T, F, T)], (T, F, T)),
    ("two-steps-last-never-relevant", S2 + ".", None, [(T, T, T), (T, F, T)], (T, F, T)),
    ("prose-is-one-???-step", "The dog is red, so it is big, so it is calm. __PROVED__", None,
     [(F, T, F)], (F, T, F)),
    ("empty-is-one-???-step", "", None, [(F, T, F)], (F, T, F)),
    ("marker-only-is-one-???-step", "__PROVED__", None, [(F, T, F)], (F, T, F)),
    ("step-block-without-conclusion-judged-against-???",
     "Step 1: fact1 & fact2 -> int1: the dog is big.\nStep 2: int1 & fact3 -> hypothesis", None,
     [(T, T, T), (F, T, F)], (F, T, F)),
    ("step-block-hypothesis-alone-on-a-line",
     "Step 1: fact1 & fact2 -> int1: the dog is big.\nStep 2: int1 & fact3 ->\nhypothesis", None,
     [(T, T, T), (T, F, T)], (T, F, T)),
    ("numbered-N-dot", "1. fact1 & fact2 -> int1: the dog is big.\n2. int1 & fact3 -> hypothesis: the dog is calm.",
     None, [(T, T, T), (T, F, T)], (T, F, T)),
    ("numbered-N-colon-preamble-ignored",
     "Let me think.\n1: fact1 & fact2 -> int1: the dog is big.\n2: int1 & fact3 -> hypothesis.", None,
     [(T, T, T), (T, F, T)], (T, F, T)),
    ("step-blocks-with-commentary",
     "Step 1: fact1 & fact2 -> int1: the dog is big.\nThis is modus ponens.\n"
     "Step 2: int1 & fact3 -> hypothesis: the dog is calm.", None, [(T, T, T), (T, F, T)], (T, F, T)),
    ("bold-step-markers-are-not-step-lines",
     "**Step 1:** fact1 & fact2 -> int1: the dog is big.\n**Step 2:** int1 & fact3 -> hypothesis", None,
     [(T, F, T)], (T, F, T)),
    ("semicolons-inside-a-step-block-do-not-split",
     "Step 1: fact1 -> int1: the dog is red; fact2 -> int2: the dog is big\n"
     "Step 2: int2 & fact3 -> hypothesis: the dog is calm", None, [(T, F, F), (T, F, T)], (T, F, F)),
    ("newline-split", "fact1 & fact2 -> int1: the dog is big.\nint1 & fact3 -> hypothesis: the dog is calm.", None,
     [(T, T, T), (T, F, T)], (T, F, T)),
    ("period-split", "fact1 & fact2 -> int1: the dog is big. int1 & fact3 -> hypothesis: the dog is calm", None,
     [(T, T, T), (T, F, T)], (T, F, T)),
    ("semicolon-split-wins-over-newlines",
     "fact1 -> int1: the dog is red; fact4 -> int2: the cat is red\nint1 & fact2 -> int3: the dog is big", None,
     [(T, T, T), (T, F, F)], (T, F, F)),
    ("id-in-conclusion-text-is-a-premise",
     "fact1 & fact2 -> int1: the dog is big; fact3 -> int2: as int1 says the dog is calm", None,
     [(T, T, T), (F, F, F)], (F, F, F)),
    ("restated-fact-leaves-other-facts-???",
     "fact1: the dog is red\nfact1 & fact2 -> int1: the dog is big; int1 & fact3 -> hypothesis: the dog is calm",
     None, [(F, T, F), (F, F, F)], (F, F, F)),
    ("all-used-facts-restated", "fact1: the dog is red\nfact2: if the dog is red then the dog is big\n"
     "fact1 & fact2 -> int1: the dog is big", None, [(T, F, T)], (T, F, T)),
    ("unknown-premise-id-reads-???", "fact9 & fact1 -> int1: the dog is red", None, [(T, F, T)], (T, F, T)),
    ("unknown-conclusion-id-reads-???", "fact1 & fact2 -> int1. ; int1 & fact3 -> hypothesis: the dog is calm",
     None, [(F, T, F), (T, F, T)], (F, F, F)),
    ("???-premise-entails-???-conclusion-under-this-stub", "fact9 -> int5.", None, [(T, F, T)], (T, F, T)),
    ("assumption-step-skipped", "void -> assump1: the dog is big; assump1 & fact3 -> int1: the dog is calm; "
     "int1 -> hypothesis: the dog is calm", None, [None, (T, T, T), (T, F, T)], (T, F, T)),
    ("a-skipped-assumption-step-still-cites", "fact1 -> int1: the dog is red; int1 -> assump1: the dog is red",
     None, [(T, T, T), None], (T, T, T)),
    ("only-assumption-steps-not-counted", "void -> assump1: the dog is big", None, [None], None),
    ("bottom-conclusion-relevant", "fact2 -> int1: the dog is big; int1 & fact4 -> int2: ⊥", None,
     [(T, T, T), (F, T, F)], (F, T, F)),
    ("negated-hypothesis-reads-the-problems-hypothesis",
     "fact4 -> int1: the cat is red; int1 -> ¬hypothesis: the dog is not calm", None,
     [(T, T, T), (F, F, F)], (F, F, F)),
    ("negated-hypothesis-without-colon-dropped", "fact4 -> int1: the cat is red; int1 -> ¬hypothesis; __DISPROVED__",
     None, [(T, F, T)], (T, F, T)),
    ("response-hypothesis-kept-when-it-restates-a-fact",
     "fact1: the dog is red\nfact1 -> int1: the dog is red\nint1 -> hypothesis: the dog is red", None,
     [(T, T, T), (T, F, T)], (T, F, T)),
    ("response-hypothesis-overwritten-by-the-problems",
     "fact1 -> int1: the dog is red\nint1 -> hypothesis: the dog is red", None, [(T, T, T), (F, F, F)], (F, F, F)),
    ("hypothesis-heading-line", "fact1: the dog is red\nHypothesis\nthe dog is red\n"
     "fact1 -> int1: the dog is red; int1 -> hypothesis.", None, [(T, T, T), (T, F, T)], (T, F, T)),
    ("line-definitions-later-line-wins", "int1: the dog is big\nint1: the cat is red\nfact4 -> int1. ; "
     "int1 -> hypothesis: the dog is calm", None, [(T, T, T), (F, F, F)], (F, F, F)),
    ("line-definition-is-a-step-without-premises", S2.replace("fact1 & fact2 -> ", ""), None,
     [(F, T, F), (T, F, T)], (F, F, F)),
    ("ids-with-spaces-and-case", "Fact 1 & FACT2 -> INT 1: the dog is big; int1 & fact 3 -> Hypothesis: the dog is calm",
     None, [(T, T, T), (T, F, T)], (T, F, T)),
    ("leading-zero-is-another-id", "fact01 -> int1: the dog is red", None, [(F, F, F)], (F, F, F)),
    ("prose-cut-at-periods-has-no-conclusion",
     "Using fact1 and fact2 the dog is big. Then with fact3 we get the hypothesis. __PROVED__", None,
     [(F, T, F)], (F, T, F)),
    ("hypothesis-dot-in-prose-concludes", "Using fact1 and fact2, the dog is big.\nSo we prove the hypothesis.\n"
     "__PROVED__", None, [(F, F, F)], (F, F, F)),
    ("paper-input-without-periods-gives-only-the-first-fact", S2, PAPER_INPUT_NO_PERIODS,
     [(F, T, F), (F, F, F)], (F, F, F)),
    ("paper-input-with-periods", S2, "Facts: fact1: the dog is red. fact2: if the dog is red then the dog is big. "
     "fact3: if the dog is big then the dog is calm.\nHypothesis: the dog is calm.", [(T, T, T), (T, F, T)], (T, F, T)),
    ("multi-logieval-fact-labels-not-read", "fact1 -> int1: the dog is red", MULTI_LOGIEVAL_INPUT,
     [(F, F, F)], (F, F, F)),
    ("three-premises-valid-not-atomic", "fact1 & fact2 & fact3 -> hypothesis: the dog is calm", None,
     [(T, F, F)], (T, F, F)),
    ("dead-end-chain-relevant-by-citation", "fact1 & fact2 -> int1: the dog is big; fact4 -> int2: the cat is red; "
     "int2 -> int3: the cat is red; int1 & fact3 -> hypothesis: the dog is calm", None,
     [(T, T, T), (T, T, T), (T, F, T), (T, F, T)], (T, F, T)),
]


@pytest.mark.parametrize("response, given_input, steps, flags",
                         [pytest.param(*case[1:], id=case[0]) for case in COMPAT_CASES])
def test_compat_reproduces_the_released_eval_step(response, given_input, steps, flags):
    problem = input_problem(given_input) if given_input else None
    assert compat_outcome(response, problem) == (steps, flags)


def test_compat_prompt_shows_sorted_premises_and_question_marks_for_unknown_ids():
    # The released code shows premises in set order (unstable across runs); we sort them.
    judge = WordsJudge()
    compat_rows("fact3 & fact9 & int2 -> int1: the dog is calm", backend=judge)
    assert judge.prompts[0] == ("Premises:\nfact3: if the dog is big then the dog is calm\nfact9: ???\nint2: ???\n"
                                "Conclusion:\nint1: the dog is calm\n"
                                "Do the premises entail the conclusion? Answer true or false only.")


def test_compat_judges_a_step_less_response_against_question_marks_and_asks_atomicity_only_when_valid():
    judge = WordsJudge()
    compat_rows("I think the dog is calm. __PROVED__", backend=judge)
    assert judge.prompts == ["Premises:\n\nConclusion:\n???\n"
                             "Do the premises entail the conclusion? Answer true or false only."]


def test_compat_unreadable_replies_count_false():
    class Replies:
        def generate(self, conversations, config=None):
            return ["**true**" if "entail" in c[-1]["content"] else "yes" for c in conversations]

    rows = compat_rows(S2, backend=Replies())
    assert rows["valid"].tolist() == [False, False] and rows["atomic"].tolist() == [False, False]


def test_compat_table_counts_every_sample_with_a_counted_step():
    responses = [S2, "", "void -> assump1: the dog is big", "fact1 & fact2 & fact3 -> hypothesis: the dog is calm"]
    problem = dog_problem()
    from finelogic.eval.judges import LLMJudge

    rows = judge_responses(pd.DataFrame({"id": "dog", "response": responses, "model": "m", "setting": "CoT"}),
                           {"dog": problem}, LLMJudge(WordsJudge()), policy="released")
    row = soundness_table(rows, policy="released").iloc[0]
    # the assumption-only response has no counted step: not counted (as the released aggregate); the
    # empty one is one ??? step, counted
    assert (row.samples, row.scored, row.no_steps, row.undecided) == (4, 3, 1, 0)
    assert row.all_valid == pytest.approx(2 / 3) and row.all_relevant == pytest.approx(1 / 3)
    assert row.all_atomic == pytest.approx(1 / 3)
    assert (row.steps, row.valid_rate, row.relevant_rate, row.atomic_rate) == (4, 0.75, 0.5, 0.5)


def test_compat_symbolic_judge_counts_what_it_cannot_read_as_false():
    rows = judge_responses(pd.DataFrame({"id": ["dog"] * 2, "response": [GOLD, "I think so."]}),
                           {"dog": dog_problem()}, SymbolicJudge(), policy="released")
    assert rows["valid"].tolist() == [True, False] and rows["relevant"].tolist() == [False, True]
    assert rows["reason"].iloc[1].endswith("counted False (released code)")


@pytest.mark.parametrize("policy", ["principled", "released"])
def test_smoke_soundness_page_runs_under_both_policies(results, policy):
    from finelogic.book import soundness as page
    from finelogic.runs import soundness

    run = soundness.run("smoke", seed=0, accuracy_run=no_responses(), policy=policy)
    assert run.policy == policy and run.provenance.settings["policy"] == policy
    table = page.table3_side_by_side(run)
    gold = table.loc[("ours", "gold proofs (sanity check)", "gold")]
    if policy == "principled":
        assert (gold["all_valid"], gold["all_relevant"], gold["all_atomic"]) == (100.0, 100.0, 100.0)
        assert gold["all_relevant (released)"] == 0.0
    else:
        # the smoke gold proofs: two one-step "factN -> hypothesis;" proofs read as one ??? step (no colon),
        # two longer ones whose colon-less final step is dropped (the new last step is not relevant)
        assert (gold["all_valid"], gold["all_relevant"], gold["all_atomic"]) == (50.0, 50.0, 50.0)
        assert "all_relevant (released)" not in table.columns
    assert gold["scored / samples"] == "4 / 4"
    assert f"policy = `{policy}`" in page.run_caption("04_soundness.ipynb", run)
    assert len(page.teaching_example(run, "04_soundness.ipynb")) == 3
    run.write()
    assert soundness.SoundnessRun.read(results / "smoke" / "soundness").policy == policy


def test_compat_run_with_a_handed_in_judge_model(results):
    from finelogic.data.suites import evaluation_sets
    from finelogic.runs import accuracy as accuracy_config
    from finelogic.runs import soundness
    from finelogic.runs.accuracy import AccuracyRun
    from finelogic.runs.provenance import Provenance

    fld = next(s for s in evaluation_sets(accuracy_config.PROFILES["smoke"], seed=0) if s.name == "fld")
    ids = [p.id for p in fld.problems[:2]]
    records = pd.DataFrame({"id": ids, "dataset": "fld", "model": "m", "setting": "CoT", "depth_bucket": "0-3",
                            "response": ["I think it holds. __PROVED__", ""]})
    made = AccuracyRun(Provenance("accuracy", "smoke", 0), records=records, eval_sets=(fld,))
    model = ScriptedJudgeModel()
    run = soundness.run("smoke", seed=0, accuracy_run=made, backends={"embedded": model}, judge="hybrid",
                        llm_judge="embedded", llm_quality_steps=0, policy="released")
    # each response is one ??? step: z3 cannot read ???, the judge model is asked and says "true" (twice);
    # both steps make the same two prompts, each sent once
    assert run.steps["valid"].tolist() == [True, True] and run.steps["relevant"].tolist() == [True, True]
    assert run.steps["decided_by"].tolist() == ["llm", "llm"] and len(model.prompts) == 2
    assert model.prompts[0] == ("Premises:\n\nConclusion:\n???\n"
                                "Do the premises entail the conclusion? Answer true or false only.")


def test_unknown_soundness_policy_is_an_error(results):
    from finelogic.runs import soundness

    with pytest.raises(ValueError, match="released"):
        soundness.run("smoke", seed=0, accuracy_run=no_responses(), policy="lenient")


# ---- memos: a rerun reads steps and verdicts back instead of working them out --------------------------

class CountingMemo(dict):
    """A plain mapping that counts what is written into it."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def __setitem__(self, key, value) -> None:
        self.writes += 1
        super().__setitem__(key, value)


DISTINCT_JUDGED = {"principled": 5, "released": 5}


@pytest.mark.parametrize("policy", ["principled", "released"])
def test_memos_give_identical_steps_and_a_rerun_neither_reads_nor_judges_again(policy):
    problem = dog_problem()
    records = pd.DataFrame({"id": ["dog"] * len(RESPONSES), "response": RESPONSES, "model": "m",
                            "setting": "Few-shot"})
    plain = judge_responses(records, {"dog": problem}, SymbolicJudge(), policy=policy)
    verdicts, read = CountingMemo(), CountingMemo()
    first_judge, second_judge = SymbolicJudge(memo=verdicts), SymbolicJudge(memo=verdicts)
    first = judge_responses(records, {"dog": problem}, first_judge, policy=policy, memo=read)
    writes = (verdicts.writes, read.writes)
    again = dog_problem()  # an equal problem, another object: found by content, not by identity
    second = judge_responses(records, {"dog": again}, second_judge, policy=policy, memo=read)
    pd.testing.assert_frame_equal(first, plain)
    pd.testing.assert_frame_equal(second, plain)
    assert soundness_table(second, policy).equals(soundness_table(plain, policy))
    # a step met twice (the gold proof's steps recur in three responses) is judged once
    assert first_judge.computed == DISTINCT_JUDGED[policy] and writes == (first_judge.computed, len(RESPONSES))
    assert second_judge.computed == 0 and (verdicts.writes, read.writes) == writes


def test_a_kept_verdict_is_not_reused_for_a_problem_whose_facts_differ():
    verdicts = {}
    step = parse_steps(GOLD, dog_problem())[0]  # fact1 & fact2 -> int1: the dog is big.
    assert SymbolicJudge(memo=verdicts).judge(step, dog_problem()).valid is True
    changed = dog_problem()
    changed = Problem(**{**changed.__dict__, "formulas": {**changed.formulas, "fact2": "{A}{a} -> {C}{a}"}})
    judge = SymbolicJudge(memo=verdicts)
    assert judge.judge(step, changed).valid is False and judge.computed == 1
    assert len(verdicts) == 2


def test_hybrid_rerun_reads_symbolic_verdicts_back_but_asks_the_llm_again():
    """LLM replies are never memoised (the model cache keeps those): the backend sees the same prompts."""
    from finelogic.eval.judges import HybridJudge, LLMJudge

    problem = dog_problem()
    records = pd.DataFrame({"id": ["dog", "dog"], "response": [GOLD, "The dog is calm, I think."]})
    verdicts, read, prompts, computed = {}, {}, [], []
    tables = []
    for _ in range(2):
        model = ScriptedJudgeModel()
        symbolic = SymbolicJudge(memo=verdicts)
        tables.append(judge_responses(records, {"dog": problem}, HybridJudge(symbolic, LLMJudge(model)),
                                      policy="released", memo=read))
        prompts.append(model.prompts)
        computed.append(symbolic.computed)
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert computed == [2, 0]
    assert len(prompts[0]) == 2 and prompts[1] == prompts[0]  # validity, then atomicity of the prose step
    assert tables[1]["decided_by"].tolist() == ["symbolic", "llm"]


def test_the_quality_set_is_kept_and_read_back_equal():
    from finelogic.eval.judge_quality import judge_quality
    from finelogic.runs import soundness
    from finelogic.runs.soundness import quality_set

    memo = CountingMemo()
    made = quality_set(soundness.Quality(n=3, depths=(1, 2, 3)), seed=0, memo=memo)
    read = quality_set(soundness.Quality(n=3, depths=(1, 2, 3)), seed=0, memo=memo)
    assert memo.writes == 1 and len(read) == len(made) > 10
    assert [(i.step, i.kind, i.valid, i.atomic, i.response) for i in read] == \
        [(i.step, i.kind, i.valid, i.atomic, i.response) for i in made]
    assert [i.problem.to_json() for i in read] == [i.problem.to_json() for i in made]
    assert judge_quality({"s": SymbolicJudge()}, read).equals(judge_quality({"s": SymbolicJudge()}, made))


def _memo_rows(store) -> list[tuple]:
    """The memos' rows in the store, as ``sqlite3 store.sqlite "SELECT memo, key, value FROM memos"`` shows them."""
    import sqlite3

    with sqlite3.connect(store) as db:
        return db.execute("SELECT memo, key, value FROM memos ORDER BY memo, key").fetchall()


def test_a_soundness_rerun_gives_the_same_tables_and_adds_nothing_to_its_memos(results, tmp_path, monkeypatch):
    from finelogic.runs import soundness

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    first = soundness.run("smoke", seed=0, accuracy_run=no_responses(), policy="released")
    memos = _memo_rows(tmp_path / "cache" / "store.sqlite")
    second = soundness.run("smoke", seed=0, accuracy_run=no_responses(), policy="released")
    assert sorted({memo for memo, _, _ in memos}) == ["soundness-quality-set", "soundness-steps", "symbolic-verdicts"]
    assert _memo_rows(tmp_path / "cache" / "store.sqlite") == memos
    for table in ("gold_steps", "quality", "labels", "example"):
        pd.testing.assert_frame_equal(getattr(second, table), getattr(first, table))


def test_responses_naming_no_problem_of_the_accuracy_run_are_an_error(results):
    from finelogic.data.suites import evaluation_sets
    from finelogic.runs import accuracy as accuracy_config
    from finelogic.runs import soundness
    from finelogic.runs.accuracy import AccuracyRun
    from finelogic.runs.provenance import Provenance

    fld = next(s for s in evaluation_sets(accuracy_config.PROFILES["smoke"], seed=0) if s.name == "fld")
    records = pd.DataFrame({"id": [fld.problems[0].id, "fld-from-another-run"], "dataset": "fld", "model": "m",
                            "setting": "CoT", "depth_bucket": "0-3", "response": ["x", "y"]})
    made = AccuracyRun(Provenance("accuracy", "smoke", 0), records=records, eval_sets=(fld,))
    with pytest.raises(ValueError, match="1 FLD responses .* name no FLD problem .*fld-from-another-run"):
        soundness.run("smoke", seed=0, accuracy_run=made)
