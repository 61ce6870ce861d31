"""LogicMark-style generator: hop depth as defined, exact buckets, 50/50 answers, verified distractors."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from finelogic.data import generate, load_dataset
from finelogic.data.generators import logicmark
from finelogic.data.generators.logicmark import (
    STYLES,
    Config,
    Premises,
    Statement,
    equality_edges,
    generate_logicmark,
    hop_depth,
    to_record,
)

CARD_EXAMPLE = ["a = b", "b != c", "a = d"]
CARD_TASK = ["a = g", "e != f", "b != g", "d = h", "c = g", "a != b", "d = e", "a = e"]


@pytest.mark.parametrize("statement, hops", [
    ("a = b", 1),    # a premise: directly stated
    ("b != c", 1),
    ("b = d", 2),    # b = a, a = d
    ("a != c", 2),   # the card's answer: a = b, b != c
    ("c != a", 2),   # orientation does not matter
    ("c != d", 3),   # c != b, b = a, a = d
    ("a = c", None),  # not entailed
    ("d = c", None),
])
def test_hop_depth_on_the_cards_dataset_example(statement, hops):
    assert hop_depth(CARD_EXAMPLE, statement) == hops


@pytest.mark.parametrize("statement, hops", [
    ("c = h", 5),    # c = g, g = a, a = e, e = d, d = h: the card's task-format answer
    ("a = h", 3),
    ("b != h", 4),   # b != a, a = e, e = d, d = h (beats b != g and g..h, 1 + 4)
    ("f != g", 3),   # f != e, e = a, a = g
    ("c != h", None),
    ("c != e", None),
    ("b = h", None),
])
def test_hop_depth_on_the_cards_task_format_example(statement, hops):
    assert hop_depth(CARD_TASK, statement) == hops


def test_union_find_entailment_and_consistency():
    premises = Premises(Statement.parse(s) for s in CARD_TASK)
    assert premises.consistent()
    assert premises.entails(Statement.parse("h = c")) and premises.entails(Statement.parse("h != b"))
    assert not premises.entails(Statement.parse("b = f")) and not premises.entails(Statement.parse("b != f"))
    assert not Premises(Statement.parse(s) for s in ["a = b", "b = c", "c != a"]).consistent()
    assert Statement.parse("a != b") == Statement.parse("b != a") != Statement.parse("a = b")
    with pytest.raises(ValueError, match="not a LogicMark statement"):
        Statement.parse("a == b")


def test_config_defaults_are_the_cards_example():
    config = Config()
    assert (config.limit, config.min_vars, config.max_vars, config.min_eq, config.max_eq) == (1000, 4, 8, 2, 5)
    assert (config.min_neq, config.max_neq, config.num_choices, config.min_answer_hop) == (1, 3, 4, 2)
    assert config.target_hop_dist == {1: 0.10, 2: 0.40, 3: 0.25, 4: 0.15, 5: 0.10}
    assert config.styles == STYLES and config.seed == 42
    with pytest.raises(ValueError, match="sum to 1"):
        Config(target_hop_dist={1: 0.5})


def test_the_cards_config_runs_with_the_cards_fields_and_values():
    # The card's "Generator" snippet, with limit=20 so that it runs in a moment.
    from dataclasses import fields

    card_fields = ["limit", "min_vars", "max_vars", "min_eq", "max_eq", "min_neq", "max_neq", "num_choices",
                   "min_answer_hop", "target_hop_dist", "styles", "seed"]
    assert [f.name for f in fields(Config)] == card_fields
    cfg = Config(limit=20, min_vars=4, max_vars=8, min_eq=2, max_eq=5, min_neq=1, max_neq=3, num_choices=4,
                 min_answer_hop=2, target_hop_dist={1: 0.10, 2: 0.40, 3: 0.25, 4: 0.15, 5: 0.10},
                 styles=("chain", "star", "clusters", "tree", "bipartite", "mixed"), seed=42)
    formatted = [to_record(p) for p in generate_logicmark(cfg)]
    assert [r["id"] for r in formatted[:3]] == ["symbolic_00000", "symbolic_00001", "symbolic_00002"]
    assert set(formatted[0]) == {"id", "domain", "context", "options", "answer_index", "answer", "hop_depth"}
    assert Counter(r["hop_depth"] for r in formatted) == {1: 2, 2: 8, 3: 5, 4: 3, 5: 2}


def test_bucket_sizes_use_largest_remainders():
    assert Config().bucket_sizes() == {1: 100, 2: 400, 3: 250, 4: 150, 5: 100}
    # 7 * (.1, .4, .25, .15, .1) = .7, 2.8, 1.75, 1.05, .7 -> floors 0, 2, 1, 1, 0 plus 3 by remainder
    assert Config(limit=7).bucket_sizes() == {1: 1, 2: 3, 3: 2, 4: 1, 5: 0}


def test_styles_shape_the_equality_graph():
    import random

    import networkx as nx

    vs = list("abcdef")

    def graph(style: str, k: int, seed: int) -> nx.Graph:
        return nx.Graph(equality_edges(style, vs, k, random.Random(seed)))

    chain = graph("chain", 5, 0)
    assert nx.is_isomorphic(chain, nx.path_graph(6))  # the far ends are 5 hops apart
    star = graph("star", 5, 0)
    assert sorted(d for _, d in star.degree()) == [1, 1, 1, 1, 1, 5]
    tree = graph("tree", 5, 0)
    assert nx.is_tree(tree) and max(d for _, d in tree.degree()) == 3  # binary: parent + two children
    bipartite = graph("bipartite", 20, 1)
    assert bipartite.number_of_edges() == 9 and nx.is_bipartite(bipartite)  # at most 3 x 3 crossing edges
    clusters = graph("clusters", 5, 3)
    assert nx.is_forest(clusters) and nx.number_connected_components(clusters) >= 2
    assert graph("mixed", 4, 4).number_of_edges() == 4


@pytest.fixture(scope="module")
def card_problems():
    return generate_logicmark(Config())


def test_card_config_hits_the_target_hop_distribution_exactly(card_problems):
    assert len(card_problems) == 1000
    assert Counter(p.depth for p in card_problems) == {1: 100, 2: 400, 3: 250, 4: 150, 5: 100}


def test_answers_are_half_equalities_half_inequalities_in_every_bucket(card_problems):
    ops = Counter((p.depth, p.meta["answer_op"]) for p in card_problems)
    assert ops == {(h, op): n // 2 for h, n in Config().bucket_sizes().items() for op in ("=", "!=")}
    assert Counter(" != " in p.options[p.answer_index] for p in card_problems) == {True: 500, False: 500}


def test_exactly_one_option_follows_and_the_flipped_answer_is_a_distractor(card_problems):
    for p in card_problems:
        premises = Premises(Statement.parse(f.text) for f in p.facts)
        options = [Statement.parse(o) for o in p.options]
        answer = options[p.answer_index]
        assert premises.consistent()
        assert [premises.entails(o) for o in options] == [i == p.answer_index for i in range(4)], p.id
        assert answer.flipped() in options
        assert len(set(options)) == 4
        assert premises.hop_depth(answer) == p.depth


def test_premise_counts_variables_and_styles_follow_the_config(card_problems):
    for p in card_problems:
        ops = Counter(Statement.parse(f.text).op for f in p.facts)
        assert 2 <= ops["="] <= 5 and 1 <= ops["!="] <= 3, p.facts_text
        variables = {v for f in p.facts for v in f.text.split(" ") if v.isalpha()}
        assert variables <= set("abcdefgh")
    assert {p.meta["style"] for p in card_problems} == set(STYLES)
    assert [p.id for p in card_problems[:2]] == ["symbolic_00000", "symbolic_00001"]


def test_records_round_trip_through_the_loader(card_problems, tmp_path):
    records = [to_record(p) for p in card_problems[:50]]
    path = tmp_path / "logicmark.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    loaded = load_dataset("logicmark", path)
    assert [to_record(p) for p in loaded] == records
    assert [(p.facts, p.options, p.answer_index, p.depth) for p in loaded] == [
        (p.facts, p.options, p.answer_index, p.depth) for p in card_problems[:50]]
    first = records[0]
    assert first["context"].startswith("If:\n") and first["context"].endswith("\n\nThen")
    assert first["answer"] == first["options"][first["answer_index"]] and first["domain"] == "Symbolic"


def test_same_seed_same_problems():
    small = Config(limit=20, seed=5)
    assert [p.to_json() for p in generate_logicmark(small)] == [p.to_json() for p in generate_logicmark(small)]
    assert generate_logicmark(small) != generate_logicmark(Config(limit=20, seed=6))


def test_natural_sampling_respects_min_answer_hop():
    problems = generate_logicmark(Config(limit=40, target_hop_dist=None, min_answer_hop=3, seed=1))
    assert len(problems) == 40 and min(p.depth for p in problems) >= 3
    assert Counter(p.meta["answer_op"] for p in problems) == {"=": 20, "!=": 20}


def test_impossible_bucket_fails_loudly(monkeypatch):
    monkeypatch.setattr(logicmark, "MAX_ATTEMPTS", 50)
    with pytest.raises(RuntimeError, match="no 9-hop"):
        generate_logicmark(Config(limit=2, max_vars=5, target_hop_dist={9: 1.0}))


def test_generate_dispatches_to_logicmark():
    assert generate("logicmark", n=6, seed=3) == generate_logicmark(Config(limit=6, seed=3))
    assert len(generate("logicmark", n=4, seed=0, styles=("chain",))) == 4
