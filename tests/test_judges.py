"""Judges of a proof step (paper §3.2): the LLM judge's prompts and batching, the symbolic judge's exactness,
hybrid routing, and the measured judge quality on labelled steps from gold proofs."""
from __future__ import annotations

import pytest

from finelogic.data.generators.fld import generate_fld
from finelogic.data.generators.prontoqa import generate_prontoqa
from finelogic.eval.judge_quality import judge_quality, label_counts, labelled_steps
from finelogic.eval.judges import (
    ATOMICITY_PROMPT,
    VALIDITY_PROMPT,
    HybridJudge,
    LLMJudge,
    SymbolicJudge,
    Verdict,
    parse_reply,
)
from finelogic.eval.steps import parse_steps
from finelogic.models.base import GenerationConfig
from tests.test_soundness import GOLD, dog_problem


class FakeBackend:
    """Answers each prompt with ``answer(prompt)``; records every ``generate`` call."""

    def __init__(self, answer=lambda prompt: "true") -> None:
        self.answer = answer
        self.calls: list[tuple[list[str], GenerationConfig]] = []

    def generate(self, conversations, config=GenerationConfig()):
        prompts = [c[-1]["content"] for c in conversations]
        self.calls.append((prompts, config))
        return [self.answer(p) for p in prompts]


def steps_of(response: str):
    problem = dog_problem()
    return parse_steps(response, problem), problem


# ---- the paper's LLM judge --------------------------------------------------------------------------------

def test_llm_judge_sends_the_papers_prompts_verbatim_at_temperature_zero():
    backend = FakeBackend()
    steps, problem = steps_of(GOLD)
    LLMJudge(backend).judge(steps[0], problem)
    (validity, config), (atomicity, _) = backend.calls
    assert validity == ["Premises:\nfact1: the dog is red.\nfact2: if the dog is red then the dog is big.\n"
                        "Conclusion:\nint1: the dog is big.\n"
                        "Do the premises entail the conclusion? Answer true or false only."]
    assert atomicity == [validity[0].replace("Do the premises entail the conclusion?", "Is this inference atomic?")]
    assert config.temperature == 0 and config.max_new_tokens <= 8


def test_prompt_templates_end_with_the_papers_questions():
    assert VALIDITY_PROMPT.endswith("\nDo the premises entail the conclusion? Answer true or false only.")
    assert ATOMICITY_PROMPT.endswith("\nIs this inference atomic? Answer true or false only.")


def test_hypothesis_conclusion_line_shows_the_hypothesis_text():
    backend = FakeBackend()
    steps, problem = steps_of("fact4 -> ¬hypothesis;")
    LLMJudge(backend).judge(steps[0], problem)
    assert "Conclusion:\n¬hypothesis: the dog is not calm.\n" in backend.calls[0][0][0]


@pytest.mark.parametrize("reply, expected", [
    ("true", True), ("True.", True), ("Yes, it does", True), ("1", True), ("**TRUE**", True),
    ("false", False), (" No.", False), ("0", False), ("The premises", None), ("", None),
])
def test_reply_parsing(reply, expected):
    assert parse_reply(reply) is expected


# The released code's reading (strip + lower, then startswith; anything else retried on a second model
# and finally False): worked out by hand, checked against its ask_bool with a stubbed transport.
@pytest.mark.parametrize("reply, expected", [
    ("true", True), ("  True.\n", True), ("YES", True), ("yes, it does", True), ("1", True), ("10", True),
    ("false", False), (" No.", False), ("nope", False), ("not entailed", False), ("0", False),
    ("**TRUE**", False), ('"true"', False), ("The premises entail it", False), ("", False), ("maybe", False),
])
def test_released_reply_parsing_never_undecided(reply, expected):
    assert parse_reply(reply, released=True) is expected


def test_released_steps_are_judged_with_their_own_texts_and_released_replies():
    from finelogic.eval.steps import released_steps

    backend = FakeBackend(lambda p: "**true**" if "entail" in p else "true")
    problem = dog_problem()
    (step,) = released_steps("fact2 & fact1 -> int1: the dog is big.", problem)
    verdict = LLMJudge(backend).judge(step, problem)
    # premises sorted; the problem's facts cut at periods as the released code reads them
    assert backend.calls[0][0] == ["Premises:\nfact1: the dog is red\nfact2: if the dog is red then the dog is big\n"
                                   "Conclusion:\nint1: the dog is big\n"
                                   "Do the premises entail the conclusion? Answer true or false only."]
    assert (verdict.valid, verdict.atomic) == (False, False) and len(backend.calls) == 1  # atomicity not asked


def test_judge_all_batches_validity_then_atomicity_of_the_valid_ones_only():
    answers = {"int1: the dog is big.": "false", "hypothesis: the dog is calm.": "true"}
    backend = FakeBackend(lambda p: next(a for k, a in answers.items() if f"Conclusion:\n{k}" in p))
    steps, problem = steps_of(GOLD)
    verdicts = LLMJudge(backend).judge_all([(s, problem) for s in steps])
    assert [len(prompts) for prompts, _ in backend.calls] == [2, 1]  # one call per question kind
    assert verdicts[0] == Verdict(False, False, "judge replied 'false'", "llm")
    assert (verdicts[1].valid, verdicts[1].atomic, verdicts[1].decided_by) == (True, True, "llm")


def test_llm_judge_never_guesses():
    backend = FakeBackend(lambda p: "Let me think")
    steps, problem = steps_of(GOLD + " The dog is calm.\nint7 & fact1 -> int8: the dog is big.")
    verdicts = LLMJudge(backend).judge_all([(s, problem) for s in steps])
    assert [v.valid for v in verdicts] == [None, None, None]
    assert verdicts[0].reason == "validity reply not true/false: 'Let me think'"
    assert verdicts[2].reason == "a premise or the conclusion has no text to show the judge"  # int7 undefined
    assert len(backend.calls[0][0]) == 2  # the undefined-premise step was never sent


def test_llm_judge_skips_free_text_and_assumption_openings_without_a_call():
    backend = FakeBackend()
    free, problem = steps_of("The dog is calm.")
    opening, _ = steps_of("void -> assump1: the dog is big.")
    verdicts = LLMJudge(backend).judge_all([(free[0], problem), (opening[0], problem)])
    assert backend.calls == [] and [v.valid for v in verdicts] == [None, None]


# ---- the symbolic judge -----------------------------------------------------------------------------------

@pytest.mark.parametrize("response, valid, atomic", [
    ("fact1 & fact2 -> int1: the dog is big.", True, True),  # modus ponens
    ("fact1 & fact2 & fact3 -> hypothesis", True, False),  # two modus ponens merged
    ("fact4 & fact2 -> int1: the dog is big.", False, False),  # the cat is red, not the dog
    ("fact1 -> int1: either the dog is red or the dog is calm.", True, True),  # or-introduction
    ("fact1 -> int1: the dog is red.", True, True),  # reiteration
    ("fact1 & fact2 -> int1: the dog is not big.", False, False),
])
def test_symbolic_judge_on_hand_made_steps(response, valid, atomic):
    steps, problem = steps_of(response)
    verdict = SymbolicJudge().judge(steps[-1], problem)
    assert (verdict.valid, verdict.atomic, verdict.decided_by) == (valid, atomic, "symbolic")


def test_symbolic_judge_names_the_rule():
    steps, problem = steps_of(GOLD)
    assert SymbolicJudge().judge(steps[1], problem).reason == "entailed (z3); one rule: modus_ponens"


@pytest.mark.parametrize("response, reason", [
    ("fact1 & fact2 -> int1: the dog is very big.", "int1: sentence outside the template grammar"),
    ("fact9 -> int1: the dog is big.", "unknown premise id 'fact9'"),
    ("int5 -> hypothesis", "premise 'int5' is not defined before this step"),
    ("fact1 & fact2 -> int1", "int1 has no text"),
    ("The dog is calm.", "not in FLD step notation"),
])
def test_symbolic_judge_says_why_it_cannot_decide(response, reason):
    steps, problem = steps_of(response)
    verdict = SymbolicJudge().judge(steps[-1], problem)
    assert verdict.valid is None and verdict.atomic is None and verdict.decided_by == ""
    assert verdict.reason.startswith(reason)


def test_symbolic_judge_handles_discharged_assumptions():
    steps, problem = steps_of("void -> assump1: the dog is big.; [assump1] & fact3 -> int1: the dog is calm.; "
                              "[assump1] & int1 -> int2: if the dog is big then the dog is calm.;")
    verdicts = SymbolicJudge().judge_all([(s, problem) for s in steps])
    assert verdicts[0].valid is None  # opening an assumption is not judged
    assert (verdicts[1].valid, verdicts[1].atomic) == (False, False)  # assump1 is not a z3 premise
    assert (verdicts[2].valid, verdicts[2].atomic) == (True, True)  # implication introduction


def test_prontoqa_vocabulary_is_outside_the_template_grammar():
    problem = generate_prontoqa(2, seed=0)[0]
    steps = parse_steps(problem.proof, problem)
    verdict = SymbolicJudge().judge(steps[0], problem)
    assert verdict.valid is None
    assert verdict.reason == "the problem has no formulas in the template grammar (no symbolic check)"


# ---- hybrid ----------------------------------------------------------------------------------------------

def test_hybrid_uses_the_llm_only_where_the_symbolic_judge_cannot_decide():
    backend = FakeBackend(lambda p: "true")
    steps, problem = steps_of("Step 1: fact1 & fact2 -> int1: the dog is quite big.\n"
                              "Step 2: fact4 & fact2 -> int2: the dog is big.\nStep 3: So the dog is calm.")
    judge = HybridJudge(SymbolicJudge(), LLMJudge(backend))
    verdicts = judge.judge_all([(s, problem) for s in steps])
    assert [v.decided_by for v in verdicts] == ["llm", "symbolic", ""]
    assert [v.valid for v in verdicts] == [True, False, None]
    assert [len(prompts) for prompts, _ in backend.calls] == [1, 1]  # only the unparseable sentence
    assert verdicts[0].reason.startswith("symbolic: int1: sentence outside the template grammar")


# ---- judge quality on gold proofs ----------------------------------------------------------------------------

def exactness(problems):
    items = labelled_steps(problems, seed=0)
    judge = SymbolicJudge()
    verdicts = judge.judge_all([(i.step, i.problem) for i in items])
    return items, verdicts


@pytest.fixture(scope="module")
def small_set():
    return generate_fld(40, seed=11, depths=range(0, 8), labels=("PROVED", "DISPROVED"), progress=False)


def test_symbolic_judge_is_exact_on_gold_and_injected_steps(small_set):
    items, verdicts = exactness(small_set)
    counts = label_counts(items).set_index("kind")
    assert counts.loc["gold", "n"] == counts.loc["gold", "atomic"] > 100
    assert counts.loc["merged", "valid"] == counts.loc["merged", "n"] and counts.loc["merged", "atomic"] == 0
    assert counts.loc["negated_conclusion", "valid"] == 0
    wrong = [(i.kind, i.step.format(), v) for i, v in zip(items, verdicts)
             if (v.valid, v.atomic) != (i.valid, i.atomic)]
    assert wrong == []


def test_judge_quality_table(small_set):
    items = labelled_steps(small_set[:6], seed=0)
    table = judge_quality({"symbolic": SymbolicJudge(), "always-true": LLMJudge(FakeBackend())}, items)
    exact = table[table.judge == "symbolic"]
    assert exact[["accuracy", "precision", "recall", "detection"]].to_numpy().min() == 1.0
    always = table[(table.judge == "always-true") & (table.criterion == "valid")].iloc[0]
    valid_share = sum(i.valid for i in items) / len(items)
    assert always.accuracy == pytest.approx(valid_share) and always.recall == 1.0 and always.detection == 0.0


@pytest.fixture(scope="module")
def five_hundred():
    return generate_fld(500, seed=7, depths=range(0, 12), labels=("PROVED", "DISPROVED"), progress=False)


@pytest.mark.slow
def test_symbolic_judge_on_500_generated_proofs(five_hundred):
    items, verdicts = exactness(five_hundred)
    gold = [(i, v) for i, v in zip(items, verdicts) if i.kind == "gold"]
    assert len(gold) > 2000
    assert all(v.valid and v.atomic for _, v in gold)  # 100% on gold steps
    injected = [(i, v) for i, v in zip(items, verdicts) if i.kind != "gold"]
    flagged = [v.valid is False or v.atomic is False for i, v in injected if not (i.valid and i.atomic)]
    assert len(flagged) > 2000 and sum(flagged) / len(flagged) >= 0.99
    assert all((v.valid, v.atomic) == (i.valid, i.atomic) for i, v in injected)


def test_a_prompt_asked_for_two_steps_is_sent_once_and_both_get_its_reply():
    backend = FakeBackend(lambda p: "false")
    steps, problem = steps_of(GOLD)
    verdicts = LLMJudge(backend).judge_all([(steps[0], problem), (steps[1], problem), (steps[0], problem)])
    assert [len(prompts) for prompts, _ in backend.calls] == [2]  # validity only: every reply is false
    assert [v.valid for v in verdicts] == [False, False, False] and verdicts[2] == verdicts[0]
