"""Specification of the FLD-style generator (issue 3, part 4-fld) and its English templates.

Checks here recompute everything from the returned Problem (formulas, sentences, proof text) with
finelogic.logic directly, independently of the generator's own ``verify_fld_problem``.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from finelogic.data.generate import generate
from finelogic.data.generators.fld import (
    GeneratorError,
    ProofNode,
    even_plan,
    fld_paper_plan,
    generate_fld,
    generate_fld_problem,
    proof_depth,
    verify_fld_problem,
)
from finelogic.data.generators.nl import (
    SentenceParseError,
    Vocabulary,
    parse_sentence,
    render_sentence,
)
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.logic import states
from finelogic.logic.proof import ProofStep, parse_proof_steps
from finelogic.logic import Theory, entails, matches_rule, negate, parse_formula, predicates

p = parse_formula
SEED = 2026
FLD_EXAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "fld" / "fld_v0.2_record_example.json"
VOCAB = Vocabulary(
    predicates={"A": "red", "B": "big", "C": "shy"},
    propositions={"P": "the parade", "Q": "the storm"},
    constants={"a": "the dog", "b": "the cat"},
)


# ---------------------------------------------------------------------------------------------------
# English templates and the inverse parser


@pytest.mark.parametrize(
    "formula, sentence",
    [
        ("{A}{a}", "the dog is red."),
        ("¬{B}{b}", "the cat is not big."),
        ("{P}", "the parade happens."),
        ("¬{Q}", "the storm does not happen."),
        ("({A}{a} & ¬{B}{a})", "both the dog is red and the dog is not big."),
        ("({A}{a} v {C}{b})", "either the dog is red or the cat is shy."),
        ("{P} -> ¬{Q}", "if the parade happens then the storm does not happen."),
        ("¬({A}{a} & {B}{a})", "it is not the case that both the dog is red and the dog is big."),
        ("(x): ¬({A}x & {B}x) -> ¬{C}x",
         "for everything, if it is not the case that both it is red and it is big then it is not shy."),
        ("(Ex): ({A}x v ¬{B}x)", "there is something such that either it is red or it is not big."),
        ("(x): {A}x -> {C}{a}", "for everything, if it is red then the dog is shy."),
        ("#F#", "this is a contradiction."),
    ],
)
def test_templates_render_and_parse_back(formula, sentence):
    assert render_sentence(p(formula), VOCAB) == sentence
    assert parse_sentence(sentence, VOCAB) == p(formula)


def test_nesting_is_unambiguous():
    f = p("((({A}{a} & {B}{a}) v {C}{b}) -> {A}{b}) -> {P}")
    text = render_sentence(f, VOCAB)
    assert text == ("if if either both the dog is red and the dog is big or the cat is shy then the cat is red "
                    "then the parade happens.")
    assert parse_sentence(text, VOCAB) == f


def test_parser_tolerates_case_commas_punctuation_and_spaces():
    expected = p("(x): {A}x -> {B}x")
    for text in ["For everything, if it is red then it is big.", "  FOR EVERYTHING IF IT IS RED  THEN IT IS BIG !",
                 "for everything, if it is red then it is big"]:
        assert parse_sentence(text, VOCAB) == expected
    # the long negation is accepted before an atom too
    assert parse_sentence("it is not the case that the dog is red", VOCAB) == p("¬{A}{a}")


@pytest.mark.parametrize(
    "text, position, words",
    [
        ("the dog is purple.", 3, "known adjective"),
        ("the dog is red and", 4, "end of sentence"),
        ("it is red.", 0, "'it' outside"),
        ("if the dog is red the cat is big.", 5, "expected 'then'"),
        ("the horse is red.", 0, "expected a sentence"),
        ("", 0, "empty sentence"),
        ("the parade occurs.", 2, "does not happen"),
    ],
)
def test_unparseable_sentences_raise_with_word_position(text, position, words):
    with pytest.raises(SentenceParseError) as info:
        parse_sentence(text, VOCAB)
    assert info.value.position == position
    assert words in str(info.value)


def test_vocabulary_rejects_words_that_would_make_parsing_ambiguous():
    with pytest.raises(ValueError, match="not a usable word"):
        Vocabulary(predicates={"A": "then"})
    with pytest.raises(ValueError, match="not a usable word"):
        Vocabulary(constants={"a": "dog"})  # constants are "the <noun>"
    with pytest.raises(ValueError, match="share a word"):
        Vocabulary(predicates={"A": "red", "B": "red"})
    with pytest.raises(ValueError, match="both a constant and a proposition"):
        Vocabulary(propositions={"P": "the dog"}, constants={"a": "the dog"})
    assert Vocabulary.from_dict(VOCAB.to_dict()) == VOCAB


def test_rendering_refuses_formulas_without_templates():
    with pytest.raises(ValueError, match="variable"):
        render_sentence(p("{A}x"), VOCAB)
    with pytest.raises(ValueError, match="one quantifier"):
        render_sentence(p("(x): (Ex): {A}x"), VOCAB)


# ---------------------------------------------------------------------------------------------------
# Small building blocks


def test_proof_steps_split_fld_notation():
    steps = parse_proof_steps("fact3 & fact1 -> int1: the dog is red.; int1 & fact2 -> hypothesis;")
    assert steps == [ProofStep(("fact3", "fact1"), "int1", "the dog is red."), ProofStep(("int1", "fact2"), "hypothesis")]
    assert steps[0].format() == "fact3 & fact1 -> int1: the dog is red."


def test_tree_height_is_rule_applications_on_the_longest_path():
    leaf = ProofNode(p("{A}"))
    mp = ProofNode(p("{B}"), "modus_ponens", (leaf, ProofNode(p("{A} -> {B}"))))
    top = ProofNode(p("({B} & {C})"), "and_intro", (mp, ProofNode(p("{C}"))))
    assert (leaf.height, mp.height, top.height) == (0, 1, 2)
    assert top.leaves() == [p("{A}"), p("{A} -> {B}"), p("{C}")]


def test_even_plan_spreads_the_remainder_over_the_first_cells():
    plan = even_plan(7, range(2), (PROVED, DISPROVED, UNKNOWN))
    assert list(plan.values()) == [2, 1, 1, 1, 1, 1]
    assert list(plan) == [(0, PROVED), (0, DISPROVED), (0, UNKNOWN), (1, PROVED), (1, DISPROVED), (1, UNKNOWN)]


def test_paper_plans_have_the_papers_shapes():
    test = fld_paper_plan("test")
    assert sum(test.values()) == 1100 and len(test) == 60
    assert {test[d, PROVED] for d in range(20)} == {25} and {test[d, DISPROVED] for d in range(20)} == {25}
    assert {test[d, UNKNOWN] for d in range(20)} == {5}
    train = fld_paper_plan("train")
    assert sum(train.values()) == 9500 and len(train) == 48
    assert {train[d, PROVED] for d in range(16)} == {250}
    assert [train[d, UNKNOWN] for d in range(16)] == [94] * 12 + [93] * 4
    small = fld_paper_plan("test", scale=0.1)  # 2.5 -> 3 (half up), 0.5 -> 1
    assert small[0, PROVED] == 3 and small[19, UNKNOWN] == 1 and sum(small.values()) == 20 * 7
    assert set(fld_paper_plan("train", scale=0.0001).values()) == {1}  # at least one per cell
    with pytest.raises(ValueError, match="kind"):
        fld_paper_plan("dev")


def test_small_scale_paper_sampler_has_the_right_shape():
    problems = generate("fld_paper_train", seed=SEED, scale=0.004, progress=False)  # 1 per (depth 0-15, label) cell
    cells = collections.Counter((_depth_of(q), q.label) for q in problems)
    assert cells == collections.Counter({(d, lab): 1 for d in range(16) for lab in (PROVED, DISPROVED, UNKNOWN)})


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="label"):
        generate_fld_problem(1, 2, "TRUE")
    with pytest.raises(ValueError, match="depth"):
        generate_fld_problem(1, -1, PROVED)


def test_an_rng_and_its_seed_give_the_same_problem():
    a = generate_fld_problem(random.Random(5), 4, DISPROVED, problem_id="x")
    b = generate_fld_problem(random.Random(5), 4, DISPROVED, problem_id="x")
    assert a.to_json() == b.to_json()
    assert generate_fld_problem(5, 4, DISPROVED).meta["seed"] == 5


def test_verification_catches_a_corrupted_problem():
    good = generate_fld_problem(3, 3, PROVED)
    verify_fld_problem(good)
    with pytest.raises(GeneratorError, match="labelled DISPROVED"):
        verify_fld_problem(dataclasses.replace(good, label=DISPROVED))
    wrong_int = {**good.formulas, "int1": "{ZZ}{a}"}
    with pytest.raises(GeneratorError):
        verify_fld_problem(dataclasses.replace(good, formulas=wrong_int))
    bad_text = (dataclasses.replace(good.facts[0], text="the unicorn is red."),) + good.facts[1:]
    with pytest.raises(GeneratorError, match="SentenceParseError"):
        verify_fld_problem(dataclasses.replace(good, facts=bad_text))
    with pytest.raises(GeneratorError, match="depth"):
        verify_fld_problem(dataclasses.replace(good, depth=4))


@pytest.mark.skipif(not FLD_EXAMPLE.exists(), reason=f"real FLD record not found at {FLD_EXAMPLE}")
def test_depth_definition_agrees_with_the_real_fld_record():
    record = json.loads(FLD_EXAMPLE.read_text())
    formulas = {k: v.strip() for k, v in re.findall(r"(sent\d+): (.*?)(?= sent\d+:|$)", record["context_formula"])}
    formulas["hypothesis"] = record["hypothesis_formula"]
    for step in parse_proof_steps(record["proofs_formula"][0]):
        if step.text is not None:
            formulas[step.conclusion] = step.text
    assert len(formulas) == 6 + 1 + 6  # sent1-6, hypothesis, assump1 and int1-5
    assert proof_depth(record["proofs_formula"][0], formulas) == record["depth"] == 6


def test_depth_zero_is_a_restatement():
    assert proof_depth("fact2 -> hypothesis;", {"fact2": "{A}{a}", "hypothesis": "{A}{a}"}) == 0
    assert proof_depth("fact2 -> ¬hypothesis;", {"fact2": "{A}{a}", "hypothesis": "¬{A}{a}"}) == 0
    assert proof_depth("fact2 -> hypothesis;", {"fact2": "({A}{a} & {B}{a})", "hypothesis": "{A}{a}"}) == 1


# ---------------------------------------------------------------------------------------------------
# Generated problems: every property on every item


def _depth_of(q: Problem) -> int:
    return q.depth if q.label != UNKNOWN else q.meta["proof_depth"]


def _formulas(q: Problem) -> dict:
    f = {k: p(v) for k, v in q.formulas.items()}
    f["¬hypothesis"] = negate(f["hypothesis"])
    return f


def _generate(n: int) -> tuple[list[Problem], float]:
    start = time.perf_counter()
    problems = generate_fld(n, seed=SEED, progress=False)
    return problems, time.perf_counter() - start


@pytest.fixture(scope="module", params=[
    pytest.param(180, id="3-per-cell"),
    pytest.param(3000, id="1000-per-label", marks=pytest.mark.slow),
])
def generated(request):
    problems, seconds = _generate(request.param)
    print(f"\ngenerated {len(problems)} FLD problems in {seconds:.1f} s ({len(problems) / seconds:.1f}/s)")
    return problems


def test_depth_and_label_distribution_is_exactly_as_requested(generated):
    per_cell = len(generated) // 60
    counts = collections.Counter((_depth_of(q), q.label) for q in generated)
    assert counts == collections.Counter({(d, lab): per_cell for d in range(20) for lab in (PROVED, DISPROVED, UNKNOWN)})
    assert collections.Counter(q.label for q in generated) == {lab: len(generated) // 3 for lab in (PROVED, DISPROVED, UNKNOWN)}
    assert all(q.depth is None and q.proof is None for q in generated if q.label == UNKNOWN)
    assert len({q.id for q in generated}) == len(generated)


def test_every_label_is_re_decided_by_z3(generated):
    for q in generated:
        f = _formulas(q)
        facts = [f[x.id] for x in q.facts]
        proves, disproves = entails(facts, f["hypothesis"]), entails(facts, f["¬hypothesis"])
        expected = {PROVED: (True, False), DISPROVED: (False, True), UNKNOWN: (False, False)}[q.label]
        assert (proves, disproves) == expected, q.id


def test_every_gold_step_is_valid_single_rule_and_depth_matches(generated):
    for q in generated:
        if q.label == UNKNOWN:
            continue
        f = _formulas(q)
        steps = parse_proof_steps(q.meta["proof_formal"])
        assert [s.premises for s in steps] == [s.premises for s in parse_proof_steps(q.proof)]
        height = {x.id: 0 for x in q.facts}
        for step in steps:
            premises, conclusion = [f[i] for i in step.premises], f[step.conclusion]
            if step.text is not None:
                assert p(step.text) == conclusion
            assert len(matches_rule(premises, conclusion)) == 1, (q.id, step)
            assert entails(premises, conclusion), (q.id, step)
            reiteration = matches_rule(premises, conclusion) == ("reiteration",)
            height[step.conclusion] = max(height[i] for i in step.premises) + (0 if reiteration else 1)
        final = "hypothesis" if q.label == PROVED else "¬hypothesis"
        assert steps[-1].conclusion == final
        assert height[final] == q.depth, q.id
        assert q.meta["num_steps"] == len(steps) >= q.depth


def test_every_sentence_parses_back_to_its_formula_from_the_problem_alone(generated):
    for q in generated:
        q = Problem.from_dict(json.loads(q.to_json()))  # the judge only has the record
        vocab = q.meta["vocabulary"]
        f = _formulas(q)
        for fact in q.facts:
            assert parse_sentence(fact.text, vocab) == f[fact.id], (q.id, fact)
        assert parse_sentence(q.hypothesis, vocab) == f["hypothesis"]
        for step in parse_proof_steps(q.proof or ""):
            if step.text is not None:
                assert parse_sentence(step.text, vocab) == f[step.conclusion], (q.id, step)


def test_records_are_well_formed(generated):
    for q in generated:
        assert q.dataset == "fld" and q.meta["generated"] is True and q.meta["generator"] == "finelogic.fld"
        assert q.meta["seed"] == SEED
        assert [x.id for x in q.facts] == [f"fact{i + 1}" for i in range(len(q.facts))]
        ints = {s.conclusion for s in parse_proof_steps(q.proof or "") if s.conclusion.startswith("int")}
        assert set(q.formulas) == {x.id for x in q.facts} | {"hypothesis"} | ints
        assert set(q.meta["distractors"]) <= {x.id for x in q.facts}


def test_distractors_share_vocabulary_and_every_gold_leaf_is_necessary(generated):
    """The documented distractor check, recomputed on the first 60 labelled problems."""
    labelled = [q for q in generated if q.label != UNKNOWN][:60]
    assert sum(len(q.meta["distractors"]) for q in labelled) > 60  # distractors are actually there
    assert sum(len(q.meta["decoys"]) for q in labelled) > 60  # and decoys among them
    for q in labelled:
        f = _formulas(q)
        goal = f["hypothesis" if q.label == PROVED else "¬hypothesis"]
        used = {i for s in parse_proof_steps(q.proof) for i in s.premises if i.startswith("fact")}
        assert used == {x.id for x in q.facts} - set(q.meta["distractors"])
        with Theory([f[x.id] for x in q.facts]) as theory:
            assert theory.consistent()
            for leaf in sorted(used):
                assert not theory.entails(goal, without=[f[leaf]]), (q.id, leaf)
        proof_predicates = set().union(*(predicates(f[i]) for i in [*used, "hypothesis"]))
        decoys = set(q.meta["decoys"])
        assert decoys <= set(q.meta["distractors"])
        for d in set(q.meta["distractors"]) - decoys:
            assert predicates(f[d]) & proof_predicates, (q.id, d)
        for d in decoys:  # a decoy states the goal or its negation, or is a link of a decoy's chain
            linked = any(predicates(f[d]) & predicates(f[e]) for e in decoys - {d})
            assert states(f[d], goal) or states(f[d], negate(goal)) or linked, (q.id, d)


def test_unknown_items_lack_exactly_one_needed_fact(generated):
    for q in generated:
        if q.label != UNKNOWN:
            continue
        removed = p(q.meta["removed_fact"])
        f = _formulas(q)
        facts = [f[x.id] for x in q.facts]
        assert removed not in facts
        assert entails([*facts, removed], f["hypothesis"]) or entails([*facts, removed], f["¬hypothesis"]), q.id


# ---------------------------------------------------------------------------------------------------
# Determinism


def test_same_seed_is_byte_identical_and_a_different_seed_differs():
    def jsonl(seed: int) -> str:
        return "\n".join(q.to_json() for q in generate_fld(12, seed=seed, depths=range(0, 20, 5), progress=False))

    a, b, c = jsonl(11), jsonl(11), jsonl(12)
    assert a == b
    assert a != c
    assert [json.loads(x)["formulas"] for x in a.splitlines()] != [json.loads(x)["formulas"] for x in c.splitlines()]


def test_output_does_not_depend_on_the_hash_seed_of_the_process():
    code = ("from finelogic.data.generators.fld import generate_fld\n"
            "print('\\n'.join(q.to_json() for q in generate_fld(9, seed=4, progress=False)))")
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert outputs.pop().strip() == "\n".join(q.to_json() for q in generate_fld(9, seed=4, progress=False))
