"""The LogicMark gap analysis (benchmarks/logicmark_gap.py): the card's properties checked on items,
one-change-at-a-time tables."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from finelogic.data.generators.logicmark import Config, generate_logicmark
from finelogic.data.problem import Fact, Problem
from finelogic.eval.logicmark import score

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "logicmark_gap.py"
_spec = importlib.util.spec_from_file_location("logicmark_gap", _SCRIPT)
gap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gap)
card_properties, hop_profile, variant_table = gap.card_properties, gap.hop_profile, gap.variant_table


def _problem(facts, options, answer_index, depth, style="chain", pid="p0"):
    return Problem(id=pid, dataset="logicmark", facts=tuple(Fact(f"fact{i}", t) for i, t in enumerate(facts, 1)),
                   hypothesis="Then", options=tuple(options), answer_index=answer_index, depth=depth,
                   meta={"style": style, "n_vars": 4})


def _verdicts(table):
    return {r.property: (r.count, r.of, r.verdict) for r in table.itertuples()}


def test_generated_items_hold_every_stated_property_but_the_cards_own_contradictions():
    config = Config(limit=200, seed=7)
    table = _verdicts(card_properties(generate_logicmark(config), config))
    assert table["flipped distractor"] == (200, 200, "holds")
    assert table["50/50 answers"] == (100, 200, "holds")
    assert table["2-hop share"] == (80, 200, "holds")
    assert table["hop = shortest derivation"] == (200, 200, "holds")
    # The card's example config asks min_answer_hop=2 and 10% 1-hop items: the 20 1-hop items break the first.
    assert table["min_answer_hop"] == (180, 200, "differs")
    assert table["500 per bucket"] == (2, 5, "differs")  # 20 of 200 (500 of 5,000): only 1-hop and 5-hop
    assert table["style mixed"][2] == "not checkable"


def test_a_broken_item_is_reported_as_differing():
    # a = b, b = c: the answer a = c (2 hops) has no flipped distractor, and "a = d" uses a variable
    # (d) no premise mentions; "b = c" also follows, so two options are entailed.
    broken = _problem(["a = b", "b = c", "a != e"], ["a = c", "a = d", "b = c", "c != e"], 0, 2)
    table = _verdicts(card_properties([broken], Config(limit=1, min_eq=2, max_eq=2, min_neq=1, max_neq=1)))
    assert table["flipped distractor"] == (0, 1, "differs")
    assert table["same variable set"] == (2, 3, "differs")
    assert table["one option follows"] == (0, 1, "differs")
    assert table["style chain"] == (1, 1, "holds")
    # "c != e" is not a flipped premise; "a = d" and "b = c" are not distractors of that kind either.
    assert table["distractor = flipped premise"] == (0, 3, "not stated")


def test_a_star_with_a_cycle_is_neither_chain_nor_star():
    triangle = _problem(["a = b", "b = c", "c = a", "a != d"], ["a = c", "a != c", "b != d", "a = d"], 0, 1,
                        style="star")
    table = _verdicts(card_properties([triangle], Config(limit=1)))
    assert table["style star"] == (0, 1, "differs")


def test_layouts_change_one_thing_each():
    problem = _problem(["a = b", "b != c"], ["a != c", "a = c"], 0, 2)
    context = "If:\na = b\nb != c\n\nThen"
    assert gap.LAYOUTS["text"](problem) == [(context, " a != c"), (context, " a = c")]
    assert gap.LAYOUTS["text_no_space"](problem) == [(context, "a != c"), (context, "a = c")]
    lettered = context + "\nA. a != c\nB. a = c\nAnswer:"
    assert gap.LAYOUTS["lettered"](problem) == [(lettered, " A"), (lettered, " B")]


class _Fixed:
    """Answers (sum, n_tokens) per continuation from a table."""

    def __init__(self, table):
        self.table = table

    def loglikelihood(self, requests):
        return [(*self.table[continuation], False) for _, continuation in requests]


def test_lettered_layout_scores_letters_and_char_divides_by_the_letter():
    backend = _Fixed({" A": (-2.0, 1), " B": (-1.0, 1)})
    row = score([_problem(["a = b", "b != c"], ["a != c", "a = c"], 0, 2)], backend,
                requests_of=gap.LAYOUTS["lettered"]).iloc[0]
    assert (row["pred_token_mean"], row["pred_char"], row["pred_none"]) == (1, 1, 1)
    assert row["score_char_0"] == pytest.approx(-2.0)  # len("A") = 1
    assert row["option_0"] == "a != c" and not row["correct"]


class _PreferShort:
    """Scores a continuation by minus its length in characters, one token per character."""

    def loglikelihood(self, requests):
        return [(-float(len(x.strip())), len(x.strip()), False) for _, x in requests]


def test_variant_table_has_one_block_per_change_and_the_hop_profile_reads_it():
    problems = [_problem(["a = b"], ["a = b", "a != b", "ab = cd", "ab != cd"], 0, 1, pid="p1"),
                _problem(["a = b", "b = c"], ["ab != cd", "a = c", "a != c", "b = d"], 1, 2, pid="p2")]
    records = {layout: score(problems, _PreferShort(), requests_of=requests_of, model="m")
               for layout, requests_of in gap.LAYOUTS.items()}
    table = variant_table(records)
    assert list(dict.fromkeys(table["setting"])) == ["ours", "lettered", "no_space", "per_char", "sum"]
    value = {(r.setting, r.metric): r.value for r in table.itertuples()}
    # per token every option scores -1: ties go to option 0 (right for p1, wrong for p2).
    assert value[("ours", "1-hop")] == 100.0 and value[("ours", "2-hop")] == 0.0
    # the sum prefers the shortest text: "a = b" in p1 (right), "a = c" (index 1) in p2 (right).
    assert value[("sum", "1-hop")] == 100.0 and value[("sum", "2-hop")] == 100.0
    profile = hop_profile(pd.DataFrame({"model": "m", "setting": "x", "metric": [f"{h}-hop" for h in range(1, 6)],
                                        "value": [60.0, 50.0, 40.0, 45.0, 30.0]}))
    assert profile.iloc[0][["one_hop_highest", "falls_with_hops", "card_profile"]].tolist() == [True, True, True]
    flat = hop_profile(pd.DataFrame({"model": "m", "setting": "x", "metric": [f"{h}-hop" for h in range(1, 6)],
                                     "value": [40.0, 50.0, 40.0, 45.0, 50.0]}))
    assert flat.iloc[0][["one_hop_highest", "falls_with_hops"]].tolist() == [False, False]

