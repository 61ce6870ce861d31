"""The baselines beside an accuracy (finelogic.eval.cues): chance, the best constant answer and the negation
rule, scored on the same items, and the accuracy on PROVED/DISPROVED items apart from UNKNOWN ones."""
from __future__ import annotations

import pandas as pd
import pytest

from finelogic.data.problem import Problem
from finelogic.eval.cues import BEATS, cue_table, negation_rule


def _problem(i, hypothesis, label):
    return Problem(id=f"p{i}", dataset="fld", facts=(), hypothesis=hypothesis, label=label)


PROBLEMS = [_problem(0, "the cat is not red", "DISPROVED"), _problem(1, "the cat is red", "PROVED"),
            _problem(2, "it isn't the case that the dog barks", "DISPROVED"), _problem(3, "the dog barks", "UNKNOWN"),
            _problem(4, "the bird sings", "PROVED"), _problem(5, "nothing happens", "PROVED")]


def _records(predictions, model="m"):
    return pd.DataFrame({"id": [p.id for p in PROBLEMS], "dataset": "fld", "model": model, "setting": "SFT-NL",
                         "gold": [p.label for p in PROBLEMS],
                         "correct": [pred == p.label for pred, p in zip(predictions, PROBLEMS)]})


def test_the_negation_rule_reads_the_hypothesis_only():
    assert [negation_rule(p) for p in PROBLEMS] == ["DISPROVED", "PROVED", "DISPROVED", "PROVED", "PROVED",
                                                     "DISPROVED"]


def test_a_model_that_follows_the_negation_cue_is_read_as_no_better_than_it():
    cue_follower = [negation_rule(p) for p in PROBLEMS]
    row = cue_table(_records(cue_follower), PROBLEMS).iloc[0]
    assert (row["n"], row["accuracy"], row["negation_rule"]) == (6, 66.7, 66.7)
    assert (row["chance"], row["best_constant"], row["best_constant_label"]) == (33.3, 50.0, "PROVED")
    assert (row["n_pd"], row["accuracy_pd"], row["n_unknown"], row["accuracy_unknown"]) == (5, 80.0, 1, 0.0)
    assert row["reading"] == "not above the negation rule"


def test_only_an_interval_above_every_baseline_reads_as_beating_them():
    many = PROBLEMS * 40
    problems = [Problem(id=f"{p.id}-{k}", dataset="fld", facts=(), hypothesis=p.hypothesis, label=p.label)
                for k, p in enumerate(many)]
    records = pd.DataFrame({"id": [p.id for p in problems], "dataset": "fld", "model": "m", "setting": "SFT-NL",
                            "gold": [p.label for p in many], "correct": [True] * 240})
    row = cue_table(records, problems).iloc[0]
    assert row["accuracy"] == 100.0 and row["reading"] == BEATS


def test_a_record_of_no_known_problem_is_named():
    with pytest.raises(KeyError, match="'p9'"):
        cue_table(_records(["PROVED"] * 6).assign(id=["p9"] * 6), PROBLEMS)
