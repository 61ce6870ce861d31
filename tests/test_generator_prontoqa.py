"""ProntoQA-style generator: balanced labels, gold chains whose every step follows, formulas that agree."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from finelogic.data import DISPROVED, PROVED, generate
from finelogic.data.generators.prontoqa import CONCEPTS, ENTITIES, chain_proof, generate_prontoqa

# ------------------------------------------------------------------ a small independent checker
# Formulas the generator writes: atoms "{A}{a}" / "¬{A}{a}" and rules "(x): {A}x -> {B}x" / "... -> ¬{B}x".
ATOM = re.compile(r"^(¬?)\{(\w+)\}\{a\}$")
RULE = re.compile(r"^\(x\): \{(\w+)\}x -> (¬?)\{(\w+)\}x$")
STEP = re.compile(r"^(\w+) & (\w+) -> (¬?)(int\d+|hypothesis)(?:: (.*))?$")


def atom(formula: str) -> tuple[bool, str]:
    negated, predicate = ATOM.match(formula).groups()
    return (not negated, predicate)


def rule(formula: str) -> tuple[str, tuple[bool, str]]:
    source, negated, target = RULE.match(formula).groups()
    return source, (not negated, target)


def closure(formulas: dict[str, str]) -> set[tuple[bool, str]]:
    """Forward chaining from the fact atoms with the fact rules, to a fixpoint."""
    known = {atom(f) for k, f in formulas.items() if k.startswith("fact") and ATOM.match(f)}
    rules = [rule(f) for k, f in formulas.items() if k.startswith("fact") and RULE.match(f)]
    while True:
        new = {conclusion for source, conclusion in rules if (True, source) in known} - known
        if not new:
            return known
        known |= new


def english(polarity_atom: tuple[bool, str], vocabulary: dict[str, str]) -> str:
    """{B}{a} -> 'Max is a yumpus.' for concepts, 'Max is (not) red.' for properties."""
    positive, predicate = polarity_atom
    word, entity = vocabulary["{" + predicate + "}"], vocabulary["{a}"]
    if word in CONCEPTS:
        return f"{entity} is {'an' if word[0] in 'aeiou' else 'a'} {word}."
    return f"{entity} is {'' if positive else 'not '}{word}."


# ------------------------------------------------------------------ specifications


def test_chain_proof_writes_fld_notation():
    assert chain_proof("fact3", ["fact1", "fact4"], ["Max is a yumpus."], negated=False) == (
        "fact3 & fact1 -> int1: Max is a yumpus.; int1 & fact4 -> hypothesis;")
    assert chain_proof("fact2", ["fact5"], [], negated=True) == "fact2 & fact5 -> ¬hypothesis;"
    with pytest.raises(ValueError, match="need 1 intermediate"):
        chain_proof("fact1", ["fact2", "fact3"], [], negated=False)


def test_labels_are_exactly_balanced_and_hops_cycle():
    problems = generate_prontoqa(10, seed=3)
    assert Counter(p.label for p in problems) == {PROVED: 5, DISPROVED: 5}
    assert [p.depth for p in problems] == [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    assert Counter(p.label for p in generate_prontoqa(7, seed=3)) == {PROVED: 3, DISPROVED: 4}


def test_same_seed_same_problems_other_seed_other_problems():
    first = [p.to_json() for p in generate_prontoqa(6, seed=11)]
    assert first == [p.to_json() for p in generate_prontoqa(6, seed=11)]
    assert first != [p.to_json() for p in generate_prontoqa(6, seed=12)]


def test_one_hop_problem_by_hand():
    # seed 1, hops=(1,): read off once and checked by hand: "Sally is a jompus." + "Each jompus is
    # earthy." give "Sally is earthy", so "Sally is not earthy." is DISPROVED in one hop.
    (problem,) = generate_prontoqa(1, seed=1, hops=(1,))
    assert problem.hypothesis == "Sally is not earthy." and problem.label == DISPROVED and problem.depth == 1
    assert problem.facts_text == ("fact1: Sally is a jompus.\nfact2: Each jompus is earthy.\n"
                                  "fact3: Each yumpus is not earthy.")
    assert problem.proof == "fact1 & fact2 -> ¬hypothesis;"
    assert problem.formulas == {"fact1": "{A}{a}", "fact2": "(x): {A}x -> {B}x",
                                "fact3": "(x): {C}x -> ¬{B}x", "hypothesis": "¬{B}{a}"}
    assert problem.meta["vocabulary"] == {"{A}": "jompus", "{B}": "earthy", "{C}": "yumpus", "{a}": "Sally"}
    assert problem.meta["distractor_fact"] == "fact3"


@pytest.fixture(scope="module")
def problems():
    return generate_prontoqa(200, seed=0)


def test_sentences_are_prontoqa_style(problems):
    sentence = re.compile(r"^((Every|Each) [a-z]+ is (an? [a-z]+|not [a-z]+|[a-z]+)"
                          r"|[A-Z][a-z]+es are (not )?[a-z]+"
                          r"|[A-Z][a-z]+ is an? [a-z]+)\.$")
    for p in problems:
        assert all(sentence.match(f.text) for f in p.facts), p.facts_text
        assert p.hypothesis.split()[0] in ENTITIES
        assert len(p.facts) == 2 * p.depth + 1  # entity, chain links, property, distractor, decorations


def test_forward_chaining_agrees_with_every_label(problems):
    for p in problems:
        derived = closure(dict(p.formulas))
        hypothesis = atom(p.formulas["hypothesis"])
        negation = (not hypothesis[0], hypothesis[1])
        assert (hypothesis in derived, negation in derived) == (p.label == PROVED, p.label == DISPROVED), p.id


def test_every_gold_step_is_modus_ponens_on_its_premises(problems):
    for p in problems:
        formulas, vocabulary = dict(p.formulas), p.meta["vocabulary"]
        steps = p.proof.rstrip(";").split("; ")
        assert len(steps) == p.depth
        for k, step in enumerate(steps, start=1):
            known_id, rule_id, negated, conclusion_id, text = STEP.match(step).groups()
            source, conclusion = rule(formulas[rule_id])
            assert atom(formulas[known_id]) == (True, source), step
            if conclusion_id == "hypothesis":
                assert k == len(steps)
                hypothesis = atom(formulas["hypothesis"])
                expected = (not hypothesis[0], hypothesis[1]) if negated else hypothesis
                assert conclusion == expected and (negated == "¬") == (p.label == DISPROVED)
            else:
                assert conclusion_id == f"int{k}" and atom(formulas[conclusion_id]) == conclusion
                assert text == english(conclusion, vocabulary)


def test_distractor_rule_asserts_the_opposite_property_on_an_unreachable_concept(problems):
    for p in problems:
        formulas = dict(p.formulas)
        source, (polarity, prop) = rule(formulas[p.meta["distractor_fact"]])
        hypothesis_polarity, hypothesis_prop = atom(formulas["hypothesis"])
        truth = hypothesis_polarity if p.label == PROVED else not hypothesis_polarity
        assert prop == hypothesis_prop and polarity == (not truth)
        assert (True, source) not in closure(formulas)


def test_hypothesis_is_negated_about_half_the_time(problems):
    negated = sum(" not " in p.hypothesis for p in problems)
    assert 80 <= negated <= 120


def test_generate_dispatches_to_prontoqa():
    assert generate("prontoqa", n=4, seed=2) == generate_prontoqa(4, seed=2)
    assert len(generate("prontoqa", seed=0, hops=(1,))) == 500
    with pytest.raises(ValueError, match="unknown generator 'sat'"):
        generate("sat")


def test_generate_checks_fld_sizes_before_importing_the_fld_generator():
    with pytest.raises(ValueError, match="needs n"):
        generate("fld")
    with pytest.raises(ValueError, match="fixed size"):
        generate("fld_paper_test", n=10)


def test_hops_outside_what_the_vocabulary_allows_are_rejected():
    assert generate_prontoqa(1, seed=0, hops=(8,))[0].depth == 8
    with pytest.raises(ValueError, match=r"hops must be in 1\.\.8"):
        generate_prontoqa(2, seed=0, hops=(0, 9))
