"""Probing (paper §3.3, Appendix B): datasets, derivability, metrics, the probe, and feature extraction."""
from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from finelogic.logic.proof import parse_proof_steps
from finelogic.eval.probing import (accuracy_by_steps_remaining, all_rows_correct, correctness_span,
                                    correctness_spanning_steps, correctness_spans, fit_probe, majority_table,
                                    next_step_derivability, predict_table, redundant_fact_identification,
                                    row_accuracy, summarize)
from finelogic.data.problem import Fact, Problem
from finelogic.eval.probing_data import (ProbeRow, ProofLogic, Readout, build_rows, cell_counts, derivable_now,
                                         fact_roles, formula_shape, not_yet_derivable, nsd_candidates, nsd_points,
                                         nsd_rows, probing_problems, rfi_pairs, split_problems)
from finelogic.logic import entails, parse_formula
from model_fixtures import hf_backend, model_cache  # noqa: F401  (fixtures)

PLAIN = Readout("plain")

# A hand-made chain: red -> big -> calm -> dull, with distractors eager, fat -> good, hot -> ill.
VOCAB = {"predicates": dict(zip("ABCDEFGHI", ("red", "big", "calm", "dull", "eager", "fat", "good", "hot", "ill"))),
         "propositions": {}, "constants": {"a": "the cat"}}
FACTS = {"fact1": ("{A}{a}", "the cat is red."), "fact2": ("{A}{a} -> {B}{a}", "if the cat is red then the cat is big."),
         "fact3": ("{B}{a} -> {C}{a}", "if the cat is big then the cat is calm."),
         "fact4": ("{C}{a} -> {D}{a}", "if the cat is calm then the cat is dull."),
         "fact5": ("{E}{a}", "the cat is eager."), "fact6": ("{F}{a} -> {G}{a}", "if the cat is fat then the cat is good."),
         "fact7": ("{H}{a} -> {I}{a}", "if the cat is hot then the cat is ill.")}
CHAIN = Problem("chain", "fld", tuple(Fact(i, t) for i, (_, t) in FACTS.items()), "the cat is dull.", label="PROVED",
                depth=3, proof="fact1 & fact2 -> int1: the cat is big.; int1 & fact3 -> int2: the cat is calm.; "
                               "int2 & fact4 -> hypothesis;",
                formulas={**{i: f for i, (f, _) in FACTS.items()}, "hypothesis": "{D}{a}", "int1": "{B}{a}", "int2": "{C}{a}"},
                meta={"vocabulary": VOCAB, "distractors": ["fact5", "fact6", "fact7"], "num_steps": 3})


@pytest.fixture(scope="module")
def problems():
    """Four problems at depth 5 (6-8 proof steps), enough for every task."""
    return probing_problems(4, seed=3, depths=(5,))


@pytest.fixture(scope="module")
def splits(problems):
    return split_problems(problems, 3)


# ------------------------------------------------------------------------------------------- datasets


def test_problems_are_proved_or_disproved_with_enough_facts_of_each_role(problems):
    # one depth: its two cells in order (the old draw alternated labels for a leading-slice split)
    assert [p.label for p in problems] == ["PROVED", "PROVED", "DISPROVED", "DISPROVED"]
    for problem in problems:
        assert problem.label in ("PROVED", "DISPROVED") and problem.depth == 5
        necessary, redundant = fact_roles(problem)
        assert len(necessary) >= 3 and len(redundant) >= 3
        assert not set(necessary) & set(redundant)


def test_drawn_problems_are_kept_in_the_memo_and_read_back_instead_of_drawn_again(problems):
    """The run keeps the drawn problems in a memo (a plain dict here): the same problems as without one,
    and a second call reads them from it (an edit made in the memo comes back)."""
    memo: dict = {}
    assert probing_problems(4, seed=3, depths=(5,), memo=memo) == problems
    assert len(memo) == 1
    (key, kept), = memo.items()
    memo[key] = json.loads(json.dumps([kept[0] | {"hypothesis": "kept in the memo"}, *kept[1:]]))  # as on disk
    again = probing_problems(4, seed=3, depths=(5,), memo=memo)
    assert again[0].hypothesis == "kept in the memo" and again[1:] == problems[1:]
    assert probing_problems(4, seed=4, depths=(5,), memo={key: kept})[0].id != problems[0].id  # other seed: other key


def test_cells_get_problems_as_evenly_as_n_allows():
    assert cell_counts(6, (3, 4), seed=0) == {(3, "PROVED"): 2, (3, "DISPROVED"): 1,
                                              (4, "PROVED"): 1, (4, "DISPROVED"): 2}
    assert set(cell_counts(60, (4, 5, 6), seed=0).values()) == {10}
    for n in range(1, 25):
        counts = cell_counts(n, (10, 11, 12, 13), seed=1)
        labels = [sum(c for (_, lab), c in counts.items() if lab == want) for want in ("PROVED", "DISPROVED")]
        depths = [sum(c for (d, _), c in counts.items() if d == want) for want in (10, 11, 12, 13)]
        assert sum(labels) == n and max(labels) - min(labels) <= 1 and max(depths) - min(depths) <= 1


def _stub(i, depth, label):
    return Problem(f"p{i}", "fld", (Fact("fact1", "x."),), "y.", label=label, depth=depth)


def test_split_is_stratified_by_depth_and_label():
    # 3 depths x 2 labels x 4 problems; 8 test problems: 24 / 3 each of 6 cells = 1.33 -> 1 each, then the
    # two largest remainders (all equal, same size: the first two cells in order) get one more
    problems = [_stub(i, d, lab) for i, (d, lab) in enumerate((d, lab) for d in (4, 5, 6)
                                                               for lab in ("PROVED", "DISPROVED") for _ in range(4))]
    split = split_problems(problems, 16, seed=0)
    assert [len(split["train"]), len(split["test"])] == [16, 8]
    cells = pd.Series([(p.depth, p.label) for p in split["test"]]).value_counts().to_dict()
    assert cells == {(4, "PROVED"): 2, (4, "DISPROVED"): 2, (5, "PROVED"): 1, (5, "DISPROVED"): 1,
                     (6, "PROVED"): 1, (6, "DISPROVED"): 1}
    assert split == split_problems(problems, 16, seed=0)          # deterministic
    other = split_problems(problems, 16, seed=1)
    assert {p.id for p in other["test"]} != {p.id for p in split["test"]}  # the seed picks the members
    assert [p.id for p in split["train"]] == sorted((p.id for p in split["train"]), key=lambda i: int(i[1:]))


def test_split_is_by_problem(splits):
    assert [len(splits["train"]), len(splits["test"])] == [3, 1]
    rows = build_rows(splits, "css", PLAIN, seed=0)
    train_ids = {r.problem_id for r in rows if r.split == "train"}
    test_ids = {r.problem_id for r in rows if r.split == "test"}
    assert train_ids and test_ids and not train_ids & test_ids


def test_css_has_one_row_per_proof_prefix_labelled_with_the_answer(splits):
    rows = build_rows(splits, "css", PLAIN, seed=0)
    for problem in splits["train"] + splits["test"]:
        mine = [r for r in rows if r.problem_id == problem.id]
        n = len(parse_proof_steps(problem.proof))
        assert len(mine) == n == mine[0].n_steps
        assert [r.step for r in mine] == list(range(1, n + 1))
        assert {r.label for r in mine} == {1 if problem.label == "PROVED" else 0}
        # the last prefix is the whole gold proof, each earlier one ends at a step's semicolon
        assert mine[-1].text.endswith(problem.proof)
        assert all(r.text.endswith(";") and r.suffix == "" for r in mine)
        # the text-only baseline reads the prefix's last step
        assert [r.candidate for r in mine] == [s.format() for s in parse_proof_steps(problem.proof)]
        assert mine[0].text.count("->") == 1 and mine[2].text.count("->") == 3


def test_css_text_in_hand_written_form(problems):
    problem = problems[0]
    first = build_rows({"test": [problem]}, "css", PLAIN, seed=0)[0]
    step1 = problem.proof.split(";")[0]
    assert first.text == f"Facts: {problem.facts_text}\nHypothesis: {problem.hypothesis}\n{step1};"


def test_rfi_necessary_facts_are_cited_by_the_gold_proof_and_redundant_ones_are_not(splits):
    rows = build_rows(splits, "rfi", PLAIN, seed=0)
    for problem in splits["train"] + splits["test"]:
        mine = [r for r in rows if r.problem_id == problem.id]
        assert [r.label for r in mine] == [1, 1, 1, 0, 0, 0]
        cited = {p for s in parse_proof_steps(problem.proof) for p in s.premises}
        for row in mine:
            fact_id = row.candidate.split(":")[0]
            assert row.candidate == f"{fact_id}: {problem.fact(fact_id).text}"
            assert (fact_id in cited) == bool(row.label)
            assert (fact_id in problem.meta["distractors"]) == (not row.label)
            assert row.step == 0 and row.prefix.endswith(f"Hypothesis: {problem.hypothesis}\n")
        assert len({r.candidate for r in mine}) == 6
        # three pairs: necessary i and redundant i have one formula shape
        ids = [r.candidate.split(":")[0] for r in mine]
        shapes = [formula_shape(parse_formula(problem.formulas[i])) for i in ids]
        assert shapes[:3] == shapes[3:]


def test_rfi_pairs_on_the_hand_made_chain():
    """Necessary: fact1 (literal), fact2-4 (if A then B); redundant: fact5 (literal), fact6-7 (if A then B)."""
    for seed in range(5):
        pairs = rfi_pairs(CHAIN, __import__("random").Random(seed))
        assert ("fact1", "fact5") in pairs
        assert {r for _, r in pairs} == {"fact5", "fact6", "fact7"}
        assert {n for n, _ in pairs} - {"fact1"} < {"fact2", "fact3", "fact4"}


def test_rfi_redundant_facts_are_really_not_needed(problems):
    """Dropping a redundant fact keeps the goal entailed; dropping a necessary one loses it (z3)."""
    problem = problems[0]
    proof = ProofLogic.of(problem)
    goal = proof.formulas["hypothesis" if problem.label == "PROVED" else "¬hypothesis"]
    facts = {f.id: proof.formulas[f.id] for f in problem.facts}
    necessary, redundant = fact_roles(problem)
    assert not entails([f for i, f in facts.items() if i != necessary[0]], goal)
    assert entails([f for i, f in facts.items() if i not in redundant], goal)


def test_nsd_candidates_of_the_hand_made_chain():
    """After step 1 (``int1``: the cat is big) of red -> big -> calm -> dull: the page holds the facts and
    ``int1``; ``int2`` (calm) is still to come, then the hypothesis (dull). Gold conclusions (big, calm,
    dull) are never candidates. Derivable now: one rule from the page; not yet: one rule that needs calm."""
    proof = ProofLogic.of(CHAIN)
    yes, no = nsd_candidates(proof, 1)
    assert [(c.rule, c.premises, c.line()) for c in yes] == [
        ("existential_intro", ("fact1",), "the cat is red -> int2: there is something such that it is red."),
        ("existential_intro", ("fact5",), "the cat is eager -> int2: there is something such that it is eager."),
        ("existential_intro", ("int1",), "the cat is big -> int2: there is something such that it is big."),
        ("and_intro", ("fact1", "fact5"), "the cat is red & the cat is eager -> int2: both the cat is red and the cat is eager."),
        ("and_intro", ("fact1", "int1"), "the cat is red & the cat is big -> int2: both the cat is red and the cat is big."),
        ("and_intro", ("fact5", "int1"), "the cat is eager & the cat is big -> int2: both the cat is eager and the cat is big.")]
    assert [(c.rule, c.premises, c.line()) for c in no] == [
        ("existential_intro", ("int2",), "the cat is calm -> int2: there is something such that it is calm."),
        ("and_intro", ("fact1", "int2"), "the cat is red & the cat is calm -> int2: both the cat is red and the cat is calm."),
        ("and_intro", ("fact5", "int2"), "the cat is eager & the cat is calm -> int2: both the cat is eager and the cat is calm."),
        ("and_intro", ("int1", "int2"), "the cat is big & the cat is calm -> int2: both the cat is big and the cat is calm.")]
    # after step 2 only the hypothesis is to come: nothing is "not yet", so the proof allows one point
    assert nsd_candidates(proof, 2)[1] == []
    assert nsd_points(proof, 6, __import__("random").Random(0)) == [1]


def test_nsd_rows_of_the_hand_made_chain_are_three_same_rule_pairs():
    rows = build_rows({"test": [CHAIN]}, "nsd", PLAIN, seed=0)
    assert [(r.step, r.label) for r in rows] == [(1, 1)] * 3 + [(1, 0)] * 3
    assert [r.candidate for r in rows] == [
        "the cat is big -> int2: there is something such that it is big.",
        "the cat is eager & the cat is big -> int2: both the cat is eager and the cat is big.",
        "the cat is red & the cat is eager -> int2: both the cat is red and the cat is eager.",
        "the cat is calm -> int2: there is something such that it is calm.",
        "the cat is eager & the cat is calm -> int2: both the cat is eager and the cat is calm.",
        "the cat is red & the cat is calm -> int2: both the cat is red and the cat is calm."]
    assert rows[0].prefix.endswith("Hypothesis: the cat is dull.\nfact1 & fact2 -> int1: the cat is big.;")
    assert all(r.suffix == f" {r.candidate};" for r in rows)
    # the one existential pair comes first (the rarer rule among "not yet"), then two and-introductions
    assert [r.candidate.count("&") for r in rows] == [0, 1, 1, 0, 1, 1]


def test_nsd_lines_kept_in_a_memo_give_the_same_rows_without_drawing_again(splits):
    """build_rows keeps each problem's NSD lines (the z3-checked part) in the memo; a second read-out's rows
    come from it (an edit made in the memo shows), and equal the rows built without a memo."""
    memo: dict = {}
    plain = build_rows(splits, "nsd", PLAIN, seed=0, memo=memo)
    assert plain == build_rows(splits, "nsd", PLAIN, seed=0)
    assert len(memo) == sum(len(p) for p in splits.values())
    key, lines = next(iter(memo.items()))
    memo[key] = [[k, [[line.upper(), label] for line, label in appended]] for k, appended in lines]  # as JSON reads it
    again = build_rows(splits, "nsd", PLAIN, seed=0, memo=memo)
    first = splits["train"][0].id
    assert [r.candidate for r in again if r.problem_id == first] == [r.candidate.upper() for r in plain if r.problem_id == first]
    assert [r for r in again if r.problem_id != first] == [r for r in plain if r.problem_id != first]


def test_nsd_rows_give_nothing_away_in_their_surface(splits):
    """No id in any candidate but the next free ``int{k+1}``; no gold step; no hypothesis; pairs of one
    rule; derivable ones have every premise on the page, the others need a conclusion still to come."""
    rows = build_rows(splits, "nsd", PLAIN, seed=0, nsd_points=2)
    assert rows
    by_problem = {p.id: p for p in splits["train"] + splits["test"]}
    for (problem_id, k), group in pd.DataFrame([r.__dict__ for r in rows]).groupby(["problem_id", "step"]):
        proof = ProofLogic.of(by_problem[problem_id])
        assert sorted(group["label"]) == [0, 0, 0, 1, 1, 1] and 1 <= k < group["n_steps"].iloc[0]
        yes, no = nsd_candidates(proof, k)
        lines = {c.line(): c for c in yes + no}
        gold = {proof.formulas[s.conclusion] for s in proof.steps} | {proof.formulas["¬hypothesis"]}
        for line, label in zip(group["candidate"], group["label"]):
            assert __import__("re").findall(r"\b(?:fact|int)\d+\b|hypothesis", line) == [f"int{k + 1}"]
            c = lines[line]
            assert c.derivable == bool(label) and c.formula not in gold
            on_page = proof.available(k)
            if label:
                assert all(p in on_page for p in c.premises)
            else:
                assert any(p not in on_page for p in c.premises)
                derived = [proof.formulas[s.conclusion] for s in proof.steps[:k]]
                assert not entails([on_page[p] for p in c.premises if p in on_page] + derived, c.formula)
        rules = [lines[line].rule_family for line in group["candidate"]]
        assert sorted(rules[:3]) == sorted(rules[3:])


def test_nsd_takes_six_points_where_the_proof_allows():
    """A depth-7 problem with six usable points of seven gets six (36 rows); the other has four."""
    import random

    rich, poorer = probing_problems(2, seed=25, depths=(7,))
    assert len(nsd_rows(rich, PLAIN, "test", random.Random(0))) == 36
    assert nsd_points(ProofLogic.of(poorer), 6, random.Random(0)) == [1, 2, 3, 4]
    assert len(nsd_rows(poorer, PLAIN, "test", random.Random(0))) == 24


def test_derivability_on_a_hand_made_chain():
    a, b, c = parse_formula("{A}{a}"), parse_formula("{B}{a}"), parse_formula("{C}{a}")
    ab, bc = parse_formula("{A}{a} -> {B}{a}"), parse_formula("{B}{a} -> {C}{a}")
    page = [a, ab, bc]  # the facts; nothing derived yet
    assert derivable_now([a, ab], b, page)             # modus ponens from the page
    assert not derivable_now([b, bc], c, page)         # needs B first
    assert not_yet_derivable([b, bc], c, page, derived=[])
    assert not derivable_now([a, ab], b, page + [b])   # already on the page: not a next step
    assert not not_yet_derivable([b, bc], c, page + [b], derived=[b])
    # entailed by the facts, yet two inferences away: derivable_now is about one rule
    assert entails(page, c) and not derivable_now([a, ab, bc], c, page)


def test_rows_are_deterministic(splits):
    one = build_rows(splits, "nsd", PLAIN, seed=5, nsd_points=2)
    two = build_rows(splits, "nsd", PLAIN, seed=5, nsd_points=2)
    assert one == two


# ------------------------------------------------------------------------------------------- metrics


def _css_table(rows):
    """Hand-made predictions: (problem, [correct at step 1..n])."""
    records = [{"problem_id": p, "step": i + 1, "n_steps": len(marks), "correct": bool(m)}
               for p, marks in rows for i, m in enumerate(marks)]
    return pd.DataFrame(records)


@pytest.mark.parametrize("marks, span", [
    ([1, 1, 1, 1, 1], 4),          # right from step 1: n - 1
    ([0, 0, 1, 1, 1], 2),          # settles at step 3: 5 - 3
    ([1, 0, 1, 1, 1], 2),          # an early lucky guess does not count
    ([1, 1, 1, 1, 0], 0),          # last wrong: 0
    ([0, 0, 0, 0, 1], 0),          # only the last right: 5 - 5
    ([1], 0),
])
def test_correctness_span_by_hand(marks, span):
    assert correctness_span([bool(m) for m in marks]) == span


def test_correctness_spanning_steps_is_the_mean_over_problems():
    table = _css_table([("p1", [0, 0, 1, 1, 1]), ("p2", [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]), ("p3", [1, 1, 0])])
    assert correctness_spans(table).to_dict() == {"p1": 2, "p2": 9, "p3": 0}
    assert correctness_spanning_steps(table) == pytest.approx(11 / 3)
    shuffled = table.sample(frac=1.0, random_state=0)  # row order does not matter
    assert correctness_spanning_steps(shuffled) == pytest.approx(11 / 3)


def test_correctness_spans_reject_missing_steps():
    table = _css_table([("p1", [1, 1, 1])]).iloc[[0, 2]]
    with pytest.raises(ValueError, match="not 1..3"):
        correctness_spans(table)


def test_rfi_and_nsd_count_problems_with_every_row_right():
    table = pd.DataFrame({"problem_id": ["a"] * 6 + ["b"] * 6 + ["c"] * 6 + ["d"] * 6,
                          "correct": [True] * 6 + [True] * 5 + [False] + [True] * 6 + [False] * 6})
    assert redundant_fact_identification(table) == 50.0
    assert next_step_derivability(table) == all_rows_correct(table) == 50.0
    assert row_accuracy(table) == pytest.approx(100 * 17 / 24)


def test_accuracy_by_steps_remaining():
    table = _css_table([("p1", [0, 1, 1]), ("p2", [0, 0, 1, 1])])
    out = accuracy_by_steps_remaining(table).set_index("steps_remaining")
    assert out.loc[0, "accuracy"] == 100.0 and out.loc[0, "n"] == 2
    assert out.loc[1, "accuracy"] == 100.0
    assert out.loc[2, "accuracy"] == 0.0          # p1 step 1 and p2 step 2 wrong
    assert out.loc[3, "n"] == 1


def _row(pid, label, task="rfi", split="train", step=0, n=5):
    return ProbeRow(task, pid, split, step, n, label, "", "p", "s")


def test_majority_baseline_predicts_the_commoner_training_label():
    train = [_row("a", 1), _row("a", 1), _row("b", 0)]
    test = [_row("c", 0, split="test"), _row("c", 1, split="test")]
    table = majority_table(train, test)
    assert table["prediction"].tolist() == [1, 1] and table["correct"].tolist() == [False, True]


def test_summary_reports_task_metric_and_row_accuracy():
    css = predict_table([_row("p", 1, "css", "test", i, 3) for i in (1, 2, 3)], [0, 1, 1])
    rfi = predict_table([_row("q", lab, "rfi", "test") for lab in (1, 1, 1, 0, 0, 0)], [1, 1, 1, 0, 0, 1])
    summary = summarize(pd.concat([css, rfi]).assign(model="m", readout="chat", probe="linear probe"))
    by_task = summary.set_index("task")
    assert by_task.loc["css", "metric"] == 1.0                         # settles at step 2 of 3
    assert by_task.loc["css", "row_accuracy"] == pytest.approx(200 / 3)
    assert by_task.loc["rfi", "metric"] == 0.0                          # one of six wrong
    assert by_task.loc["rfi", "row_accuracy"] == pytest.approx(500 / 6)


def test_bootstrap_cis_over_problems_by_hand():
    from finelogic.eval.probing import bootstrap_ci, per_problem_values

    # every problem alike: no spread, the CI is the value itself
    same = pd.DataFrame({"problem_id": ["a"] * 6 + ["b"] * 6, "correct": [True] * 5 + [False] + [True] * 5 + [False]})
    values = per_problem_values(same, "rfi")
    assert values.to_dict("list") == {"correct": [5, 5], "rows": [6, 6], "value": [0.0, 0.0]}
    ci = bootstrap_ci(values, seed=0)
    assert (ci["ci_low"], ci["ci_high"]) == (0.0, 0.0)
    assert ci["row_ci_low"] == ci["row_ci_high"] == pytest.approx(500 / 6)
    # two problems, one all right and one all wrong: resamples of 2 give 0, 50 or 100 -> the CI spans 0..100
    split = pd.DataFrame({"problem_id": ["a"] * 6 + ["b"] * 6, "correct": [True] * 6 + [False] * 6})
    ci = bootstrap_ci(per_problem_values(split, "nsd"), seed=0)
    assert (ci["ci_low"], ci["ci_high"], ci["row_ci_low"], ci["row_ci_high"]) == (0.0, 100.0, 0.0, 100.0)
    # CSS: per-problem spans 2, 9, 0 (the mean-span test's problems), resampled as whole problems
    css = _css_table([("p1", [0, 0, 1, 1, 1]), ("p2", [1] * 10), ("p3", [1, 1, 0])])
    values = per_problem_values(css, "css")
    assert values["value"].tolist() == [2.0, 9.0, 0.0]
    ci = bootstrap_ci(values, seed=0)
    assert (ci["ci_low"], ci["ci_high"]) == (0.0, 9.0)   # all-p3 and all-p2 resamples are in the 2.5% tails
    assert ci == bootstrap_ci(values, seed=0)           # seeded: the same CI every time


def test_summary_carries_the_cis():
    rfi = predict_table([_row(p, lab, "rfi", "test") for p in "abcd" for lab in (1, 1, 1, 0, 0, 0)],
                        [1, 1, 1, 0, 0, 0] * 2 + [1] * 12)
    summary = summarize(rfi.assign(model="m", readout="plain", probe="linear probe")).iloc[0]
    assert summary["metric"] == 50.0 and summary["row_accuracy"] == 75.0
    # 2 of 4 problems with every row right: the Wilson interval [15.0, 85.0]%
    assert (round(summary["ci_low"], 1), round(summary["ci_high"], 1)) == (15.0, 85.0)
    assert 50.0 <= summary["row_ci_low"] < 75.0 < summary["row_ci_high"] <= 100.0


def test_text_only_baseline_reads_a_leaky_line_and_nothing_else():
    """Power check: the same bag-of-tokens probe reads a label written into the line (as the old NSD sets'
    unwritten ``int`` ids were), and sits at 50% on lines that carry no label."""
    import random

    from finelogic.eval.probing import text_only_predictions

    rng = random.Random(0)
    words = ["red", "big", "calm", "dull", "eager", "fat", "good", "hot", "ill", "cat", "dog", "fox"]

    def rows(split, n, leak):
        out = []
        for p in range(n):
            for label in (1, 1, 1, 0, 0, 0):
                line = " ".join(rng.choice(words) for _ in range(6)) + (" int9" if leak and not label else "")
                out.append(ProbeRow("nsd", f"{split}{p}", split, 1, 5, label, line, "", ""))
        return out

    leaky = text_only_predictions(rows("train", 40, True), rows("test", 20, True))
    assert row_accuracy(leaky) == 100.0
    clean = text_only_predictions(rows("train", 40, False), rows("test", 20, False))
    assert abs(row_accuracy(clean) - 50) <= 10


@pytest.mark.slow
def test_text_only_baseline_sits_at_chance_on_the_probing_sets():
    """60 train / 30 test problems at depths 4-6 (the tiny profile's depths): ~180 RFI and ~500 NSD test
    rows. Tolerance: within 10 points of 50% (about 2.7 binomial standard errors for RFI's 180 rows, more
    for NSD), and the bootstrap 95% CI over problems holds 50%. CSS rows before the final step likewise;
    the final step writes ``-> hypothesis`` or ``-> ¬hypothesis``, the answer itself, and is read."""
    from finelogic.eval.probing import bootstrap_ci, per_problem_values, text_only_predictions

    problems = probing_problems(90, seed=0, depths=(4, 5, 6), distractors=(4, 6))
    splits = split_problems(problems, 60, seed=0)
    for task in ("rfi", "nsd", "css"):
        rows = build_rows(splits, task, PLAIN, seed=0)
        table = text_only_predictions([r for r in rows if r.split == "train"], [r for r in rows if r.split == "test"])
        if task == "css":
            last = table["step"] == table["n_steps"]
            assert table[last]["correct"].mean() >= 0.9
            table = table[~last]
        ci = bootstrap_ci(per_problem_values(table, "nsd"))  # row-accuracy CI over problems, any task
        assert abs(row_accuracy(table) - 50) <= 10, (task, row_accuracy(table))
        assert ci["row_ci_low"] <= 50 <= ci["row_ci_high"], (task, ci)


def test_table4_has_one_row_per_probe_and_one_majority_row(tmp_path):
    from finelogic.eval.probing import table4
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.probing import ProbingRun

    css = [_row("p", 1, "css", "test", i, 3) for i in (1, 2, 3)]
    rfi = [_row("q", lab, "rfi", "test") for lab in (1, 1, 1, 0, 0, 0)]
    nsd = [_row("q", lab, "nsd", "test", 2) for lab in (1, 1, 1, 0, 0, 0)]
    tables = []
    for model in ("m1", "m2"):
        tables.append(predict_table(css + rfi + nsd, [1, 1, 1] + [1] * 6 + [1, 1, 1, 0, 0, 0])
                      .assign(model=model, readout="chat", probe="linear probe"))
        tables.append(predict_table(css + rfi + nsd, [1] * 15).assign(model=model, readout="chat",
                                                                       probe="majority class"))
    predictions = pd.concat(tables, ignore_index=True)
    table = table4(predictions)
    assert table.index.tolist() == [("m1", "linear probe"), ("m2", "linear probe"), ("(labels only)", "majority class")]
    assert table.loc[("m1", "linear probe")].tolist() == [2.0, 0.0, 100.0]
    assert table.loc[("(labels only)", "majority class")].tolist() == [2.0, 0.0, 0.0]
    run = ProbingRun(Provenance("probing", "smoke", 0), predictions, summarize(predictions).round(4))
    paths = run.write(tmp_path)
    assert [p.name for p in paths] == ["predictions.csv", "summary.csv", "row_counts.csv", "splits.json",
                                       "shown_rows.json", "seconds.json", "run.json"]
    assert len(pd.read_csv(paths[1])) == 12       # 2 models x 2 probes x 3 tasks
    again = ProbingRun.read(tmp_path)
    pd.testing.assert_frame_equal(again.predictions, predictions)


def test_probe_learns_a_linear_signal_and_keeps_problems_together():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1] * 10, 3)            # 20 problems, 3 rows each
    groups = np.repeat([f"p{i}" for i in range(20)], 3)
    features = rng.normal(size=(60, 8))
    features[:, 0] += 3 * labels                  # one informative direction
    probe = fit_probe(features, labels, groups, seed=0)
    cv = probe[-1].cv
    assert len(cv) == 5
    for train, test in cv:                        # group-aware folds
        assert not set(groups[train]) & set(groups[test])
    test_features = rng.normal(size=(20, 8))
    test_labels = np.array([0, 1] * 10)
    test_features[:, 0] += 3 * test_labels
    assert (probe.predict(test_features) == test_labels).mean() >= 0.9


def test_probe_refuses_one_class():
    with pytest.raises(ValueError, match="one class"):
        fit_probe(np.zeros((4, 2)), [1, 1, 1, 1], ["a", "a", "b", "b"])


# ------------------------------------------------------------------------------------------- features


def test_chat_read_out_equals_the_chat_template(problems, embedded_tokenizer):
    from finelogic.prompts import build_conversation

    def chat_text(tokenizer, problem, content):
        messages = build_conversation(problem, "Direct") + [{"role": "assistant", "content": content}]
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    readout = Readout("chat", embedded_tokenizer)
    problem = problems[0]
    rows = build_rows({"test": [problem]}, "nsd", readout, seed=0, nsd_points=1)
    head, tail = readout.frame(problem)
    assert tail == "<|im_end|>\n<|im_start|>assistant\n"
    for row in rows + build_rows({"test": [problem]}, "css", readout, seed=0)[:2]:
        content = row.text[len(head):-len(tail)]
        assert row.text == chat_text(embedded_tokenizer, problem, content)
    # the same candidates whatever the read-out
    plain = build_rows({"test": [problem]}, "nsd", PLAIN, seed=0, nsd_points=1)
    assert [(r.step, r.label, r.candidate) for r in plain] == [(r.step, r.label, r.candidate) for r in rows]


@pytest.fixture(scope="module")
def embedded_tokenizer(model_cache):
    """The embedded model's tokenizer, read without loading its weights."""
    from finelogic.models.spec import open_model

    backend = open_model("embedded")
    tokenizer = backend.tokenizer
    assert not backend.loaded and tokenizer.chat_template
    return tokenizer


def test_kv_reuse_features_equal_one_pass_per_row(hf_backend):
    """Real SmolLM2, few rows: a shared prefix + appended suffixes vs each row's text encoded alone."""
    from finelogic.eval.probing import extract_features
    from reference_paths import one_pass_per_prefix

    splits = {"test": [CHAIN]}  # short: a 3-step proof with three same-shape RFI pairs
    rows = build_rows(splits, "css", PLAIN, seed=0)[:2] + build_rows(splits, "rfi", PLAIN, seed=0)[2:4]
    assert {r.label for r in rows[2:]} == {0, 1}
    hf_backend.stats.calls = 0
    shared = extract_features(hf_backend, rows, layer=-1)
    calls_shared = hf_backend.stats.calls
    naive = np.stack([one_pass_per_prefix(hf_backend, r.text, [len(r.text)], layer=-1, normalize=True)[0]
                      for r in rows])
    assert shared.shape == (4, 576)
    assert np.abs(shared - naive).max() < 1e-4
    assert np.allclose(np.linalg.norm(shared, axis=1), 1.0, atol=1e-5)
    # the start both texts share (the problem) in one pass, then the CSS prefixes' text and the RFI
    # prefix's, each in a pass of its own (their lengths differ by over 10%), and the RFI prefix's two
    # suffixes in one block on its KV cache
    assert calls_shared == 4, calls_shared


# ------------------------------------------------------------------------------------------- the run


class ScriptedStates:
    """A stand-in model with the ``hidden_states`` verb: each vector is a fixed pseudo-random function of
    the exact text read (so two models with different ``salt`` differ); records every call."""

    def __init__(self, salt: str = "", dim: int = 8):
        self.salt, self.dim, self.calls = salt, dim, []

    def _vector(self, text):
        seed = int(hashlib.sha256((self.salt + text).encode()).hexdigest()[:8], 16)
        return np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)

    def hidden_states(self, text, boundaries, *, layer=-1, normalize=False, suffixes=None):
        self.calls.append((text, list(boundaries), layer, suffixes))
        if suffixes is None:
            return np.stack([self._vector(text[:b]) for b in boundaries])
        return [np.stack([self._vector(text[:b] + s) for s in options]) for b, options in zip(boundaries, suffixes)]


def test_run_probes_every_model_with_one_hidden_states_call_per_problem_and_row_kind(tmp_path, monkeypatch):
    from finelogic.runs import probing

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    embedded, control = ScriptedStates(), ScriptedStates("random")
    run = probing.run("smoke", backends={probing.EMBEDDED: embedded, probing.RANDOM_INIT: control})
    predictions = run.predictions
    assert list(dict.fromkeys(predictions["model"])) == [probing.EMBEDDED, probing.RANDOM_INIT]
    assert list(predictions.columns[:3]) == ["model", "readout", "probe"]
    assert set(predictions["readout"]) == {"plain"}
    assert list(dict.fromkeys(predictions["probe"])) == ["linear probe", "majority class", "text only (candidate line)"]
    assert [len(run.splits["train"]), len(run.splits["test"])] == [4, 2]
    # stratified: the two test problems are one PROVED and one DISPROVED
    assert sorted(p.label for p in run.splits["test"]) == ["DISPROVED", "PROVED"]
    test_rows = [r for r in run.rows[probing.EMBEDDED, "plain"] if r.split == "test"]
    assert len(predictions) == 2 * 3 * len(test_rows)  # 2 models x 3 probes
    # 6 problems x (one pass over the CSS prefixes + one over the RFI/NSD prefix with its suffixes)
    assert len(embedded.calls) == len(control.calls) == 12
    assert {call[2] for call in embedded.calls} == {-1}
    assert run.provenance.models == (probing.EMBEDDED, probing.RANDOM_INIT) and run.provenance.n == 2
    assert set(run.summary["task"]) == {"css", "rfi", "nsd"} and len(run.summary) == 18
    summary = run.summary
    assert ((summary["ci_low"] <= summary["metric"] + 1e-9) & (summary["metric"] <= summary["ci_high"] + 1e-9)).all()
    # the drawn problems and each problem's NSD lines are kept for a rerun (read back: test_drawn_problems_...)
    with sqlite3.connect(tmp_path / "store.sqlite") as db:  # the memos, as `sqlite3 store.sqlite` shows them
        probes = db.execute("SELECT count(*) FROM memos WHERE memo = 'probing-probes'").fetchone()[0]
        kept = [json.loads(v) for v, in db.execute("SELECT value FROM memos WHERE memo = 'probing' ORDER BY rowid")]
    assert probes == 2 * 3 + 3  # linear probes per model and task, text-only once
    assert sorted(p["id"] for p in kept[0]) == sorted(p.id for p in run.splits["train"] + run.splits["test"])
    nsd = [r for r in run.rows[probing.EMBEDDED, "plain"] if r.task == "nsd"]
    assert len(kept) == 1 + 6 and sum(len(lines) for point in kept[1:] for _, lines in point) == len(nsd)


def test_run_names_the_profile_entries_as_table_4_rows():
    from finelogic.models.spec import parse_model
    from finelogic.runs.probing import checkpoint_entry, model_entry

    control = parse_model(model_entry("random-init", seed=3))
    assert (control.name, control.kind, control.seed) == ("SmolLM2-135M (random init)", "random-init", 3)
    assert parse_model(model_entry("embedded", seed=3)).name == "SmolLM2-135M-Instruct"
    hub = parse_model(model_entry({"name": "Llama", "path": "meta-llama/Llama-3.1-8B-Instruct"}, seed=0))
    assert (hub.name, hub.kind, hub.device_map) == ("Llama", "hf", "auto")
    assert parse_model(checkpoint_entry("/ckpt/sft-nl")).name == "sft-nl"


def test_run_rejects_an_unknown_setting():
    from finelogic.runs import probing

    with pytest.raises(ValueError, match="n_trian"):
        probing.run("smoke", n_trian=3)


@pytest.mark.slow
def test_a_warm_rerun_reads_every_feature_from_the_cache(hf_backend, model_cache, tmp_path, monkeypatch):
    from finelogic.runs import probing

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    (tmp_path / "models").symlink_to(model_cache / "models")  # the converted model, not converted again
    first = probing.run("smoke", threads=1, models=("embedded",))  # one model is enough to show it
    second = probing.run("smoke", threads=1, models=("embedded",))
    assert first.provenance.model_calls > 0
    assert second.provenance.model_calls == 0 and second.provenance.cache_hits > 0
    pd.testing.assert_frame_equal(first.predictions, second.predictions)


def test_a_reused_text_only_baseline_equals_a_fresh_one_and_must_match_its_rows():
    """The run fits the text-only baseline once and hands it to every other model's probes."""
    import dataclasses

    from finelogic.eval.probing import TEXT_ONLY, probe_predictions

    rng = np.random.default_rng(0)
    rows = [ProbeRow(task, f"{split}{p}", split, 1 if task != "css" else s, 3, label, f"line {p} {label} {s}", "", "")
            for task in ("css", "rfi", "nsd") for split, n in (("train", 6), ("test", 2)) for p in range(n)
            for s, label in ((1, 1), (2, 0), (3, int(p % 2)))]
    features = rng.normal(size=(len(rows), 8)).astype(np.float32)
    fresh = probe_predictions(rows, features)
    reused = probe_predictions(rows, features[::-1].copy(), text_only=fresh)
    text = lambda table: table[table["probe"] == TEXT_ONLY].reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(text(reused), text(fresh))
    moved = [r if r.split == "train" else dataclasses.replace(r, problem_id=r.problem_id + "x") for r in rows]
    with pytest.raises(ValueError, match="other rows"):
        probe_predictions(moved, features, text_only=fresh)


def test_probe_predictions_kept_in_a_memo_are_read_back_instead_of_fitted_again():
    """With a memo (the run's, a plain dict here) each probe's test predictions are kept, keyed by its exact
    inputs: the same tables, and a second call reads them (an edit made in the memo shows)."""
    from finelogic.eval.probing import LINEAR, probe_predictions

    rng = np.random.default_rng(1)
    rows = [ProbeRow(task, f"{split}{p}", split, 1 if task != "css" else s, 3, label, f"{task} {p} {label} {s}", "", "")
            for task in ("css", "rfi", "nsd") for split, n in (("train", 4), ("test", 2)) for p in range(n)
            for s, label in ((1, 1), (2, 0))]
    features = rng.normal(size=(len(rows), 4)).astype(np.float32)
    memo: dict = {}
    first = probe_predictions(rows, features, memo=memo)
    assert len(memo) == 6  # a linear and a text-only probe per task
    pd.testing.assert_frame_equal(first, probe_predictions(rows, features))
    memo.update({k: [1, 1, 1, 1] for k in memo})  # every probe now "predicts" 1
    again = probe_predictions(rows, features, memo=memo)
    assert (again["prediction"][again["probe"] != "majority class"] == 1).all()
    assert len(again[again["probe"] == LINEAR]) == 12


def test_a_share_of_problems_at_zero_gets_a_wilson_interval_not_a_collapsed_bootstrap():
    from finelogic.eval.probing import summarize

    # 30 NSD test problems, two rows each, none with both rows right: 0 of 30 problems, Wilson [0, 11.35]%.
    predictions = pd.DataFrame({"model": "m", "readout": "chat", "probe": "linear probe", "task": "nsd",
                                "problem_id": [f"p{i // 2}" for i in range(60)], "step": 0, "n_steps": 0,
                                "label": 1, "prediction": [i % 2 for i in range(60)],
                                "correct": [i % 2 == 1 for i in range(60)]})
    row = summarize(predictions, resamples=200).iloc[0]
    assert (row["metric"], row["ci_low"]) == (0.0, 0.0)
    assert round(row["ci_high"], 2) == 11.35
    # 3 of 30 problems right: Wilson [3.46, 25.62]%, whatever the resampling.
    predictions.loc[predictions["problem_id"].isin(["p0", "p1", "p2"]), "correct"] = True
    row = summarize(predictions, resamples=200).iloc[0]
    assert (round(row["metric"], 1), round(row["ci_low"], 2), round(row["ci_high"], 2)) == (10.0, 3.46, 25.62)
