"""Specification: the FLD-style generator's labels cannot be read off the surface (the cue rules of
finelogic.eval.cues stay near chance), and its decoys are dead ends (their antecedents are never entailed)."""
from __future__ import annotations

import collections

import pytest

from finelogic.data.generators.fld import generate_fld, generate_fld_problem, statement_counts, verify_fld_problem
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.eval.cues import consequent_rule, negation_rule
from finelogic.logic import Theory, negate, parse_formula, parse_proof_steps

p = parse_formula


def _facts(q: Problem) -> dict:
    return {f.id: p(q.formulas[f.id]) for f in q.facts}


@pytest.fixture(scope="module")
def decided() -> list[Problem]:
    """320 PROVED/DISPROVED items at depths 0-7 (20 per depth and label); about 3 s."""
    return generate_fld(320, seed=44, depths=range(0, 8), labels=(PROVED, DISPROVED), progress=False)


def _accuracy(rule, problems: list[Problem]) -> float:
    return sum(rule(q) == q.label for q in problems) / len(problems)


def test_every_generated_item_verifies(decided):
    assert collections.Counter(q.label for q in decided) == {PROVED: 160, DISPROVED: 160}
    for q in decided:
        verify_fld_problem(q)


def _disproved_fallback(q: Problem) -> str:
    """The consequent rule answering DISPROVED wherever it would fall back to the negation rule."""
    stated, negated = statement_counts(_facts(q).values(), p(q.formulas["hypothesis"]))
    return PROVED if stated and not negated else DISPROVED


def test_the_consequent_rule_and_its_disproved_fallback_variant_are_near_chance(decided):
    assert _accuracy(consequent_rule, decided) <= 0.60
    assert _accuracy(_disproved_fallback, decided) <= 0.60


def test_the_facts_state_the_hypothesis_and_its_negation_equally_often_on_every_item(decided):
    for q in decided:
        stated, negated = statement_counts(_facts(q).values(), p(q.formulas["hypothesis"]))
        assert stated == negated >= 1, q.id


def test_the_negation_rule_is_near_chance_and_negation_words_do_not_follow_the_label(decided):
    assert _accuracy(negation_rule, decided) <= 0.60
    for label in (PROVED, DISPROVED):
        items = [q for q in decided if q.label == label]
        negated = sum(negation_rule(q) == DISPROVED for q in items) / len(items)
        assert 0.40 <= negated <= 0.60, (label, negated)


def test_unknown_items_are_balanced_too():
    unknown = generate_fld(24, seed=44, depths=range(0, 8), labels=(UNKNOWN,), progress=False)
    for q in unknown:
        stated, negated = statement_counts(_facts(q).values(), p(q.formulas["hypothesis"]))
        assert stated == negated >= 1, q.id


def test_a_decoy_states_the_goal_or_its_negation_from_an_antecedent_the_facts_do_not_entail():
    q = generate_fld_problem(26, 3, PROVED)  # hypothesis {A}{a}; its gold proof ends with and-elimination
    facts = _facts(q)
    assert q.formulas["hypothesis"] == "{A}{a}" and q.proof.endswith("int2 -> hypothesis;")
    assert {i: q.formulas[i] for i in q.meta["decoys"]} == {
        "fact3": "({J}{a} & {K}{a}) -> {A}{a}",  # into the goal, no chain
        "fact4": "(x): {L}x -> ¬{A}x",  # into its negation, universal, with a two-link dead-end chain:
        "fact11": "{M}{a} -> {L}{a}",
        "fact9": "¬{N}{a} -> {M}{a}",  # ¬{N}{a} is no fact and nothing derives it
    }
    assert set(q.meta["decoys"]) <= set(q.meta["distractors"])
    cited = {i for step in parse_proof_steps(q.proof) for i in step.premises}
    assert not cited & set(q.meta["decoys"])
    assert statement_counts(facts.values(), p("{A}{a}")) == (1, 1)
    with Theory(list(facts.values())) as theory:
        assert theory.entails(p("{A}{a}")) and not theory.entails(p("¬{A}{a}"))
        for antecedent in ["({J}{a} & {K}{a})", "{L}{a}", "{M}{a}", "¬{N}{a}"]:
            assert not theory.entails(p(antecedent)), antecedent
