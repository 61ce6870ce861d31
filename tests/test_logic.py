"""Specification of finelogic.logic: FLD notation, z3 entailment, deduction rules and atomicity."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from finelogic.logic import (
    FALSUM,
    And,
    Atom,
    Const,
    Discharged,
    Exists,
    ForAll,
    FormulaSyntaxError,
    Implies,
    Not,
    Or,
    Var,
    Theory,
    consistent,
    entails,
    entails_each,
    format_formula,
    instantiate_rule,
    is_atomic_step,
    match,
    matches_rule,
    MetaFormula,
    negate,
    parse_formula,
    premise_formulas,
    substitute,
    RULE_NAMES,
    RULES,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FLD_EXAMPLE = DATA / "fld" / "fld_v0.2_record_example.json"

p = parse_formula

CANONICAL = [
    "{A}",
    "{A}{a}",
    "{AB}{ic}",
    "¬{A}{a}",
    "¬¬{A}",
    "#F#",
    "({A}{a} & {B}{b})",
    "(¬{C}{c} & {D}{c})",
    "({A} v ¬{B})",
    "(({A} & {B}) v {C})",
    "{A}{a} -> {B}{b}",
    "(¬{AA}{a} & ¬{AB}{a}) -> {B}{b}",
    "¬(¬{AA}{a} & ¬{AB}{a}) -> ¬{A}{c}",
    "(x): ¬({B}x & {D}x) -> ¬{D}x",
    "(x): {A}x",
    "(x): (¬{C}x v {D}x)",
    "(Ex): {A}x",
    "(Ex): ({A}x & ¬{B}x)",
    "(x): ¬(¬{C}x & {E}x) -> ¬{B}{c}",
    "¬({A} -> {B})",
    "({A} -> {B}) -> {C}",
    "{A} -> ({B} -> {C})",
    "¬((x): {A}x)",
    "(((x): {A}x) & {B}{a})",
    "(x): (Ey): {A}x -> {B}y",
    "{A} -> ((x): {B}x)",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_canonical_text_round_trips_exactly(text):
    assert format_formula(p(text)) == text
    assert p(format_formula(p(text))) == p(text)


def test_parser_builds_the_expected_tree():
    assert p("(x): ¬({B}x & {D}x) -> ¬{D}x") == ForAll(
        Var("x"),
        Implies(Not(And(Atom("B", Var("x")), Atom("D", Var("x")))), Not(Atom("D", Var("x")))),
    )
    assert p("{A}") == Atom("A", None)
    assert p("#F#") == FALSUM
    assert p("(Ex): {A}x") == Exists(Var("x"), Atom("A", Var("x")))


def test_parser_tolerates_whitespace_and_groups_chains_left():
    assert p("  ( ¬ {A} {a}&{B}{b} )->{C}  ") == p("(¬{A}{a} & {B}{b}) -> {C}")
    assert p("( x ) : {A} x") == p("(x): {A}x")
    assert format_formula(p("{A} v {B} v {C}")) == "(({A} v {B}) v {C})"
    # an implication chain is right-associative
    assert p("{A} -> {B} -> {C}") == Implies(Atom("A"), Implies(Atom("B"), Atom("C")))


@pytest.mark.parametrize(
    "text, position, words",
    [
        ("{A} & {B} v {C}", 10, "mixing"),
        ("({A} & {B}", 10, "expected ')'"),
        ("{A} & ", 6, "expected a formula"),
        ("{A}{a} {B}", 7, "expected end"),
        ("{A} ∧ {B}", 4, "unexpected character"),
        ("{a}", 0, "expected a formula"),
    ],
)
def test_syntax_errors_name_the_text_and_position(text, position, words):
    with pytest.raises(FormulaSyntaxError) as info:
        p(text)
    assert info.value.position == position
    assert info.value.text == text
    assert words in str(info.value)
    assert f"position {position}" in str(info.value)


@pytest.mark.skipif(not FLD_EXAMPLE.exists(), reason=f"real FLD record not found at {FLD_EXAMPLE}")
def test_every_formula_of_the_fld_example_record_round_trips():
    record = json.loads(FLD_EXAMPLE.read_text())
    texts = [record["hypothesis_formula"], record["negative_hypothesis_formula"]]
    texts += [t.strip() for t in re.split(r"sent\d+:", record["context_formula"]) if t.strip()]
    for step in record["proofs_formula"][0].split(";"):
        if ":" in step:
            texts.append(step.split(":", 1)[1].strip())
    assert len(texts) == 2 + 6 + 6  # hypothesis, negative hypothesis, 6 facts, 6 step conclusions
    for text in texts:
        assert format_formula(p(text)) == text


def test_negate_is_fld_negative_hypothesis():
    assert negate(p("¬({C} & {D})")) == p("({C} & {D})")
    assert negate(p("{A}{a}")) == p("¬{A}{a}")


def test_substitute_respects_bound_variables():
    body = p("{A}x -> (x): {B}x")
    assert substitute(body, Var("x"), Const("c")) == p("{A}{c} -> (x): {B}x")


# ---------------------------------------------------------------------------------------------------
# z3 entailment


def test_modus_ponens_and_contrapositive_are_valid():
    assert entails([p("{A}{a}"), p("{A}{a} -> {B}{a}")], p("{B}{a}"))
    assert entails([p("{A} -> {B}")], p("¬{B} -> ¬{A}"))
    assert entails([p("{A} -> {B}"), p("¬{B}")], p("¬{A}"))


def test_affirming_the_consequent_is_not_valid():
    assert not entails([p("{A} -> {B}"), p("{B}")], p("{A}"))
    assert not entails([p("{A}{a} -> {B}{a}"), p("{B}{a}")], p("{A}{a}"))


def test_quantifier_entailments():
    assert entails([p("(x): {A}x -> {B}x"), p("{A}{a}")], p("{B}{a}"))
    assert entails([p("(x): {A}x")], p("{A}{c}"))
    assert not entails([p("(x): {A}x -> {B}x"), p("{A}{a}")], p("{B}{b}"))
    assert entails([p("{A}{a}")], p("(Ex): {A}x"))
    assert not entails([p("(Ex): {A}x")], p("{A}{a}"))
    assert entails([p("(Ex): {A}x"), p("(x): {A}x -> {B}{a}")], p("{B}{a}"))


def test_falsum_and_consistency():
    assert entails([p("{A}"), p("¬{A}")], FALSUM)
    assert not consistent([p("{A}"), p("¬{A}")])
    assert consistent([p("{A}"), p("{A} -> {B}"), p("¬{C}")])
    assert consistent([])
    assert entails([], p("({A} v ¬{A})"))
    assert not entails([], p("{A}"))


def test_theory_answers_questions_about_subsets_of_its_facts():
    a, ab, bc = p("{A}{a}"), p("{A}{a} -> {B}{a}"), p("(x): {B}x -> {C}x")
    with Theory([a, ab, bc]) as theory:
        assert theory.entails(p("{C}{a}"))
        assert not theory.entails(p("{C}{a}"), without=[ab])
        assert not theory.entails(p("{C}{a}"), without=[bc])
        assert theory.entails(p("{B}{a}"), without=[bc])
        assert theory.consistent()
        # other queries in between are not affected by the theory's (guarded) facts
        assert not entails([], p("{C}{a}"))
        with Theory([a, p("¬{A}{a}")]) as inner:
            assert not inner.consistent()
            assert inner.consistent(without=[a])
        assert theory.entails(p("{C}{a}"))
        with pytest.raises(ValueError, match="not facts"):
            theory.entails(p("{C}{a}"), without=[p("{Z}")])
    with pytest.raises(RuntimeError, match="with-block"):
        theory.entails(p("{C}{a}"))


def test_entails_each_is_true_only_when_every_step_is_valid():
    mp = ([p("{A}"), p("{A} -> {B}")], p("{B}"))
    ui = ([p("(x): {A}x")], p("{A}{c}"))
    converse = ([p("{A} -> {B}"), p("{B}")], p("{A}"))
    assert entails_each([mp, ui])
    assert not entails_each([mp, converse, ui])
    assert entails_each([])


# ---------------------------------------------------------------------------------------------------
# Deduction rules


RULE_INSTANCES = [
    ("reiteration", ["{A}{a}"], "{A}{a}"),
    ("modus_ponens", ["{A}{a}", "{A}{a} -> ({B}{b} & {C}{b})"], "({B}{b} & {C}{b})"),
    ("modus_ponens", ["¬(¬{AA}{a} & ¬{AB}{a}) -> ¬{A}{c}", "¬(¬{AA}{a} & ¬{AB}{a})"], "¬{A}{c}"),
    ("and_intro", ["¬{A}", "{B}"], "(¬{A} & {B})"),
    ("and_elim_left", ["({D} & ¬{E})"], "{D}"),
    ("and_elim_right", ["({D} & ¬{E})"], "¬{E}"),
    ("or_intro_left", ["{D}"], "({D} v ¬{C})"),
    ("or_intro_right", ["¬{C}"], "({D} v ¬{C})"),
    ("or_elim", ["({A} v {B})", "{A} -> {C}", "{B} -> {C}"], "{C}"),
    ("negation_elim", ["{B}{b}", "¬{B}{b}"], "#F#"),
    ("universal_instantiation", ["(x): ¬{A}x -> ({AA}x & ¬{AB}x)"], "¬{A}{aa} -> ({AA}{aa} & ¬{AB}{aa})"),
    ("existential_intro", ["({A}{a} & ¬{B}{a})"], "(Ex): ({A}x & ¬{B}x)"),
    ("existential_elim", ["(Ex): {A}x", "(x): {A}x -> {B}{a}"], "{B}{a}"),
]


@pytest.mark.parametrize("name, premises, conclusion", RULE_INSTANCES)
def test_hand_made_instances_match_exactly_their_rule(name, premises, conclusion):
    forms = [p(t) for t in premises]
    assert matches_rule(forms, p(conclusion)) == (name,)
    assert matches_rule(list(reversed(forms)), p(conclusion)) == (name,)  # premise order is free
    assert is_atomic_step(forms, p(conclusion))
    assert entails(forms, p(conclusion))  # every rule is sound


def test_rules_with_discharged_assumptions():
    # the example record: [assump1] & int2 -> int3 with int2 = #F#
    assumption = p("(¬{AA}{a} & ¬{AB}{a})")
    assert matches_rule([Discharged(assumption), FALSUM], Not(assumption)) == ("negation_intro",)
    assert matches_rule([p("{B}"), Discharged(p("{A}"))], p("{A} -> {B}")) == ("implication_intro",)
    # without the discharge marker the same shapes are not rule instances
    assert matches_rule([assumption, FALSUM], Not(assumption)) == ()
    assert premise_formulas([Discharged(p("{A}")), p("{B}")]) == (p("{B}"),)


@pytest.mark.parametrize(
    "premises, conclusion",
    [
        (["{A}", "{A} -> {B}", "{B} -> {C}"], "{C}"),  # two modus ponens merged
        (["({A} & {B})", "{A} -> {C}"], "{C}"),  # and-elimination + modus ponens
        (["(x): {A}x -> {B}x", "{A}{a}"], "{B}{a}"),  # instantiation + modus ponens
        (["{A} -> {B}", "{B}"], "{A}"),  # affirming the consequent: not even valid
        (["({A} & {B})"], "({B} & {A})"),  # commutation is not a rule here
        (["(x): {A}x"], "{A}x"),  # instantiation must use a constant
        (["(Ex): {A}x", "(x): {A}x -> {B}x"], "{B}x"),  # eigenvariable escapes
    ],
)
def test_non_instances_are_not_atomic(premises, conclusion):
    assert matches_rule([p(t) for t in premises], p(conclusion)) == ()
    assert not is_atomic_step([p(t) for t in premises], p(conclusion))


def test_merged_steps_are_valid_but_not_atomic():
    premises, conclusion = [p("(x): {A}x -> {B}x"), p("{A}{a}")], p("{B}{a}")
    assert entails(premises, conclusion)
    assert not is_atomic_step(premises, conclusion)


def test_degenerate_step_fits_two_readings_of_one_application():
    assert matches_rule([p("({A} & {A})")], p("{A}")) == ("and_elim_left", "and_elim_right")
    assert is_atomic_step([p("({A} & {A})")], p("{A}"))


def test_match_binds_metavariables_consistently():
    pattern = Implies(MetaFormula("A"), MetaFormula("A"))
    assert match(pattern, p("{A}{a} -> {A}{a}")) == {"A": p("{A}{a}")}
    assert match(pattern, p("{A}{a} -> {B}{a}")) is None
    assert match(MetaFormula("A"), p("{B}"), {"A": p("{B}")}) == {"A": p("{B}")}
    assert match(Or(MetaFormula("A"), MetaFormula("B")), p("({A} & {B})")) is None


def test_instantiate_rule_returns_the_instantiation_constant():
    rule = RULES[RULE_NAMES.index("universal_instantiation")]
    b = instantiate_rule(rule, [p("(x): {A}x -> {B}x")], p("{A}{c} -> {B}{c}"))
    assert b["c"] == Const("c") and b["x"] == Var("x")
    assert instantiate_rule(rule, [p("(x): {A}x -> {B}x")], p("{A}{c} -> {B}{d}")) is None


# --------------------------------------------------------------------------------------------------
# FLD proof notation (finelogic.logic.proof): one reader for gold proofs and responses


def test_a_gold_proof_splits_into_steps_with_premises_conclusion_and_text():
    from finelogic.logic.proof import ProofStep, parse_proof_steps

    steps = parse_proof_steps("fact3 & fact1 -> int1: Max is a yumpus.; int1 & fact4 -> ¬hypothesis;")
    assert steps == [ProofStep(("fact3", "fact1"), "int1", "Max is a yumpus."),
                     ProofStep(("int1", "fact4"), "¬hypothesis", None)]
    assert steps[0].format() == "fact3 & fact1 -> int1: Max is a yumpus."


def test_assumptions_raw_sent_ids_and_formula_texts_read_in_gold_proofs():
    from finelogic.logic.proof import parse_proof_steps

    steps = parse_proof_steps("void -> assump1: {A}{a}; sent1 & assump1 -> int1: (x): {A}x -> {B}x; "
                              "[assump1] & int1 -> int2: #F#;")
    assert [(s.premises, s.conclusion, s.text) for s in steps] == [
        (("void",), "assump1", "{A}{a}"),
        (("sent1", "assump1"), "int1", "(x): {A}x -> {B}x"),
        (("[assump1]", "int1"), "int2", "#F#"),
    ]


def test_a_response_step_is_read_tolerantly_but_sent_ids_only_in_gold_proofs():
    from finelogic.logic.proof import ProofNotationError, parse_step

    step = parse_step("- Fact 2 and INT 1 → not hypothesis.")
    assert (step.premises, step.conclusion, step.text) == (("fact2", "int1"), "¬hypothesis", None)
    with pytest.raises(ProofNotationError) as info:
        parse_step("sent1 -> int1: the dog is red.")
    assert info.value.note == "premises are not ids: 'sent1'" and info.value.premises == ()
    with pytest.raises(ProofNotationError) as info:
        parse_step("fact1 & fact2 -> the dog is red")
    assert info.value.note.startswith("conclusion is not an id") and info.value.premises == ("fact1", "fact2")


def test_formula_and_sentence_syntax_errors_share_one_positioned_base_class():
    from finelogic.data.generators.nl import SentenceParseError, Vocabulary, parse_sentence
    from finelogic.logic import PositionedSyntaxError

    with pytest.raises(PositionedSyntaxError) as formula_error:
        p("{A} & ")
    with pytest.raises(PositionedSyntaxError) as sentence_error:
        parse_sentence("the dog is purple.", Vocabulary(predicates={"A": "red"}, constants={"a": "the dog"}))
    assert isinstance(formula_error.value, FormulaSyntaxError) and formula_error.value.position == 6
    assert isinstance(sentence_error.value, SentenceParseError)
    assert "at word" in str(sentence_error.value) and sentence_error.value.text == "the dog is purple."
