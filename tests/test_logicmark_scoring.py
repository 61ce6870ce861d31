"""LogicMark log-likelihood scoring: requests, the three normalisations, aggregation by hop, the card's avg."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from model_fixtures import hf_backend, model_cache  # noqa: F401  (pytest fixtures)

from finelogic.data.generators.logicmark import Config, generate_logicmark, hop_depth, to_record
from finelogic.data.loaders.logicmark import logicmark_problem
from finelogic.data.problem import Fact, Problem
from finelogic.eval.logicmark import (accuracy_by, answer_type, card_average, card_layout, context_of, derivation,
                                      requests_for, score, summaries, with_ci)
from finelogic.models.spec import parse_model
from finelogic.runs import logicmark as logicmark_run
from finelogic.runs.logicmark import (EMBEDDED, RANDOM_CONTROL, LogicMarkRun, logicmark_items, model_entries,
                                      parse_model_list)


def _problem(options: tuple[str, ...], answer_index: int, *, facts: tuple[str, ...] = ("a = b", "b != c"),
             depth: int = 2, pid: str = "p0", style: str | None = "chain") -> Problem:
    meta = {"style": style} if style else {}
    return Problem(id=pid, dataset="logicmark", facts=tuple(Fact(f"fact{i}", t) for i, t in enumerate(facts, 1)),
                   hypothesis="Then", options=options, answer_index=answer_index, depth=depth, meta=meta)


class TokenTableBackend:
    """A fake backend: continuations are split on spaces into tokens (" a", " =", ...), and each
    token's log-prob is read from a table chosen by the test. Records every call it receives."""

    def __init__(self, token_logprobs: dict[str, float]):
        self.token_logprobs = token_logprobs
        self.calls: list[list[tuple[str, str]]] = []

    def loglikelihood(self, requests):
        self.calls.append(list(requests))
        results = []
        for context, continuation in requests:
            tokens = [" " + word for word in continuation.split()]
            results.append((sum(self.token_logprobs[t] for t in tokens), len(tokens), False))
        return results


class FixedBackend:
    """A fake backend answering (sum, n_tokens) per continuation from a table chosen by the test."""

    def __init__(self, table: dict[str, tuple[float, int]]):
        self.table = table

    def loglikelihood(self, requests):
        return [(*self.table[continuation], False) for _, continuation in requests]


# ---------------------------------------------------------------------------------------- requests


def test_context_is_the_cards_record_context_and_options_get_a_leading_space():
    problem = _problem(("a != c", "a = c", "b = c", "a != b"), 0)
    assert context_of(problem) == "If:\na = b\nb != c\n\nThen"
    assert requests_for(problem) == [("If:\na = b\nb != c\n\nThen", " a != c"), ("If:\na = b\nb != c\n\nThen", " a = c"),
                                     ("If:\na = b\nb != c\n\nThen", " b = c"), ("If:\na = b\nb != c\n\nThen", " a != b")]


def test_context_round_trips_through_the_cards_record_format():
    generated = generate_logicmark(Config(limit=5, seed=3))
    for problem in generated:
        record = to_record(problem)
        assert context_of(problem) == record["context"]
        assert context_of(logicmark_problem(record)) == record["context"]


def test_answer_type_is_the_correct_options_operator():
    assert answer_type("a != c") == "!="
    assert answer_type("d = h") == "="
    assert answer_type("ab cd") is None


# ----------------------------------------------------------------------------------- normalisation


def test_two_token_continuation_log_likelihood_is_the_sum_of_its_token_log_probs():
    # Option "ab cd" -> continuation " ab cd" -> tokens " ab" (-0.5) and " cd" (-1.25): sum -1.75.
    backend = TokenTableBackend({" ab": -0.5, " cd": -1.25, " x": -3.0})
    problem = _problem(("ab cd", "x"), 0)
    row = score([problem], backend).iloc[0]
    assert row["loglik_0"] == pytest.approx(-1.75)
    assert row["tokens_0"] == 2
    assert row["score_token_mean_0"] == pytest.approx(-0.875)
    assert row["score_char_0"] == pytest.approx(-1.75 / 5)  # len("ab cd") = 5 characters, no leading space
    assert row["score_none_0"] == pytest.approx(-1.75)
    assert row["loglik_1"] == pytest.approx(-3.0) and row["tokens_1"] == 1


def test_the_three_normalisations_pick_their_own_option_where_they_disagree():
    # sum, tokens, len(option):   none       token_mean   char
    #   A "a = b":  -4.0, 2, 5    -4.0 best  -2.0         -0.8
    #   B "c = d":  -4.5, 3, 5    -4.5       -1.5 best    -0.9
    #   C "a != b": -4.2, 2, 6    -4.2       -2.1         -0.7 best
    #   D "c != d": -9.0, 3, 6    -9.0       -3.0         -1.5
    table = {" a = b": (-4.0, 2), " c = d": (-4.5, 3), " a != b": (-4.2, 2), " c != d": (-9.0, 3)}
    problem = _problem(("a = b", "c = d", "a != b", "c != d"), 2)
    row = score([problem], FixedBackend(table), normalization="char").iloc[0]
    assert (row["pred_none"], row["pred_token_mean"], row["pred_char"]) == (0, 1, 2)
    assert (row["correct_none"], row["correct_token_mean"], row["correct_char"]) == (False, False, True)
    assert (row["prediction"], row["correct"], row["normalization"]) == (2, True, "char")
    assert not (row["tie_none"] or row["tie_token_mean"] or row["tie_char"])
    assert row["answer_type"] == "!="
    default = score([problem], FixedBackend(table)).iloc[0]
    assert (default["prediction"], default["correct"]) == (1, False)  # token_mean is the card's default


def test_ties_go_to_the_first_option_and_are_flagged():
    table = {" a = b": (-2.0, 2), " c = d": (-2.0, 2), " a != b": (-3.0, 1)}
    row = score([_problem(("a = b", "c = d", "a != b"), 1)], FixedBackend(table)).iloc[0]
    assert (row["pred_token_mean"], row["tie_token_mean"], row["correct_token_mean"]) == (0, True, False)
    assert (row["pred_none"], row["tie_none"]) == (0, True)
    assert (row["pred_char"], row["tie_char"]) == (0, True)  # len("a = b") == len("c = d"): -0.4 twice


def test_unknown_normalization_is_rejected_before_any_model_work():
    backend = TokenTableBackend({})
    with pytest.raises(ValueError, match="token_mean, char, none"):
        score([_problem(("a = b",), 0)], backend, normalization="acc")
    assert backend.calls == []


def test_all_requests_go_to_the_backend_in_one_call():
    problems = [_problem(("a = b", "c = d"), 0, pid=f"p{i}") for i in range(5)]
    backend = TokenTableBackend({" a": -1.0, " =": -1.0, " b": -1.0, " c": -2.0, " d": -2.0})
    frame = score(problems, backend, model="fake")
    assert [len(call) for call in backend.calls] == [10]
    assert list(frame["id"]) == ["p0", "p1", "p2", "p3", "p4"] and set(frame["model"]) == {"fake"}


def test_records_carry_hop_style_and_answer_type():
    problem = _problem(("a != c", "a = c"), 0, depth=2, style="star")
    loaded = _problem(("a != c", "a = c"), 1, depth=2, style=None, pid="p1")
    frame = score([problem, loaded], FixedBackend({" a != c": (-1.0, 3), " a = c": (-2.0, 3)}))
    assert list(frame["hop"]) == [2, 2]
    assert frame["style"].iloc[0] == "star" and pd.isna(frame["style"].iloc[1])
    assert list(frame["answer_type"]) == ["!=", "="]
    assert list(frame["correct"]) == [True, False]


# ------------------------------------------------------------------------------------- aggregation


def _records() -> pd.DataFrame:
    """10 hand-made items: hop 1: 4/4 correct, hop 2: 1/2, hop 3: 2/2, hop 4: 0/1, hop 5: 0/1."""
    hops = [1, 1, 1, 1, 2, 2, 3, 3, 4, 5]
    correct = [True, True, True, True, True, False, True, True, False, False]
    styles = ["chain", "star", "chain", "star", "chain", "star", "chain", "tree", "tree", None]
    return pd.DataFrame({"id": [f"p{i}" for i in range(10)], "model": "m", "hop": hops, "style": styles,
                         "answer_type": ["=", "!="] * 5, "correct_token_mean": correct,
                         "correct_char": [not c for c in correct]})


def test_accuracy_per_hop_with_wilson_intervals():
    by_hop = accuracy_by(_records().sample(frac=1, random_state=1), "hop")
    assert list(by_hop["hop"]) == [1, 2, 3, 4, 5]
    assert list(by_hop["n"]) == [4, 2, 2, 1, 1]
    assert list(by_hop["accuracy"]) == [100.0, 50.0, 100.0, 0.0, 0.0]
    # Wilson 95% for 1/2: centre 0.5, half-width 1.96·sqrt(0.125 + 3.8415/16) / (1 + 3.8415/2) = 0.4055.
    two = by_hop.iloc[1]
    assert (two.ci_low, two.ci_high) == (pytest.approx(9.45, abs=0.01), pytest.approx(90.55, abs=0.01))
    assert accuracy_by(_records(), "hop", "char")["accuracy"].tolist() == [0.0, 50.0, 0.0, 100.0, 100.0]


def test_card_weighted_average_differs_from_the_plain_mean_over_items():
    by_hop = accuracy_by(_records(), "hop")
    avg, low, high = card_average(by_hop)
    assert avg == pytest.approx(0.10 * 100 + 0.40 * 50 + 0.25 * 100 + 0.15 * 0 + 0.10 * 0)  # 55.0
    # Only hop 2 has variance: 1.96 · 100 · sqrt(0.4² · 0.5 · 0.5 / 2) = 27.72.
    assert (low, high) == (pytest.approx(55 - 27.72, abs=0.01), pytest.approx(55 + 27.72, abs=0.01))
    layout = card_layout(_records()).set_index("metric")
    assert layout.loc["avg", "value"] == pytest.approx(55.0)
    assert layout.loc["item_mean", "value"] == pytest.approx(70.0)  # 7 of 10 items
    assert list(layout.index) == ["1-hop", "2-hop", "3-hop", "4-hop", "5-hop", "avg", "item_mean"]
    assert layout.loc["item_mean", "n"] == 10


def test_card_average_reproduces_the_cards_own_avg_column():
    from finelogic import paper
    card = paper.reported("logicmark").pivot(index="model", columns="metric", values="value")
    for model, row in card.iterrows():
        by_hop = pd.DataFrame({"hop": [1, 2, 3, 4, 5], "n": [500, 2000, 1250, 750, 500],
                               "accuracy": [row[f"{h}-hop"] for h in range(1, 6)]})
        assert card_average(by_hop)[0] == pytest.approx(row["avg"], abs=0.006), model


def test_an_empty_hop_bucket_is_a_nan_row_and_makes_the_card_average_nan():
    without_hop5 = _records()[_records()["hop"] != 5]
    assert all(math.isnan(v) for v in card_average(accuracy_by(without_hop5, "hop")))
    layout = card_layout(without_hop5).set_index("metric")
    assert layout.loc["5-hop", "n"] == 0 and math.isnan(layout.loc["5-hop", "value"])
    assert math.isnan(layout.loc["avg", "value"]) and layout.loc["item_mean", "value"] == pytest.approx(7 / 9 * 100)
    assert with_ci(layout.reset_index()).loc["m", "5-hop"] == "n/a"


def test_breakdowns_by_style_and_answer_type_leave_out_missing_styles():
    by_style = accuracy_by(_records(), "style").set_index("style")
    assert by_style["n"].to_dict() == {"chain": 4, "star": 3, "tree": 2}
    assert by_style.loc["star", "accuracy"] == pytest.approx(200 / 3)  # p1, p3 right, p5 wrong
    by_type = accuracy_by(_records(), "answer_type").set_index("answer_type")
    assert by_type["correct"].to_dict() == {"!=": 3, "=": 4}


class LengthBackend:
    """A fake backend for any item: a continuation's log-likelihood is minus its length; counts requests."""

    def __init__(self):
        self.requests = 0

    def loglikelihood(self, requests):
        self.requests += len(requests)
        return [(-float(len(continuation)), len(continuation.split()), False) for _, continuation in requests]


def test_summaries_keep_the_models_in_run_order():
    problems = [_problem(("a = b", "c = d"), i % 2, pid=f"p{i}", depth=1 + i % 5) for i in range(10)]
    backend = FixedBackend({" a = b": (-1.0, 3), " c = d": (-2.0, 3)})
    records = pd.concat([score(problems, backend, model="fake B"), score(problems, backend, model="fake A")],
                        ignore_index=True)
    tables = summaries(records)
    by_norm = tables["by_normalization"]
    assert by_norm["model"].tolist() == ["fake B"] * 3 + ["fake A"] * 3  # run order, not alphabetical
    assert by_norm["normalization"].tolist()[:3] == ["token_mean", "char", "none"]
    assert by_norm[by_norm["model"] == "fake A"]["accuracy"].tolist() == [50.0, 50.0, 50.0]  # always option 0
    assert set(tables) == {"by_hop", "by_style", "by_answer_type", "by_normalization"}


def test_run_scores_every_model_in_row_order_and_writes_the_same_tables_twice(tmp_path):
    embedded, extra = LengthBackend(), LengthBackend()
    runs = [logicmark_run.run("smoke", backends={EMBEDDED: embedded, "A fake": extra}, extra_models="A fake")
            for _ in range(2)]
    run = runs[0]
    assert run.items["model"].tolist() == [EMBEDDED] * 5 + ["A fake"] * 5  # smoke: 5 items, no random control
    assert embedded.requests == extra.requests == 2 * 4 * 5  # two runs x 4 options x 5 items
    assert run.by_normalization["model"].tolist() == [EMBEDDED] * 3 + ["A fake"] * 3  # run order
    assert run.provenance.models == (EMBEDDED, "A fake") and run.provenance.n == 5
    assert [p.id for p in run.problems] == run.items["id"].tolist()[:5]
    first = [p.name for p in run.write(tmp_path / "one")]
    runs[1].write(tmp_path / "two")
    assert first == ["items.csv", "by_hop.csv", "by_style.csv", "by_answer_type.csv", "by_normalization.csv",
                     "problems.jsonl", "run.json"]
    assert all((tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes() for name in first[:-1])
    again = LogicMarkRun.read(tmp_path / "one")
    pd.testing.assert_frame_equal(again.by_hop, run.by_hop)  # an empty setting reads back empty, not missing


def test_the_random_init_control_may_score_the_first_items_only():
    embedded, control = LengthBackend(), LengthBackend()
    run = logicmark_run.run("smoke", backends={EMBEDDED: embedded, RANDOM_CONTROL: control},
                            random_control=True, random_control_items=2)
    assert run.items["model"].tolist() == [EMBEDDED] * 5 + [RANDOM_CONTROL] * 2
    assert run.items["id"].tolist()[5:] == run.items["id"].tolist()[:2]  # the first items, in order
    assert (embedded.requests, control.requests) == (4 * 5, 4 * 2)
    means = run.by_hop[run.by_hop["metric"] == "item_mean"].set_index("model")["n"]
    assert (means[EMBEDDED], means[RANDOM_CONTROL]) == (5, 2) and run.provenance.n == 5


def test_run_refuses_an_unknown_normalization_before_any_model_work():
    backend = LengthBackend()
    with pytest.raises(ValueError, match="token_mean, char, none"):
        logicmark_run.run("smoke", backends={EMBEDDED: backend}, normalization="acc")
    assert backend.requests == 0


def test_with_ci_formats_value_and_interval_per_model():
    table = with_ci(card_layout(_records()))
    assert table.loc["m", "2-hop"] == "50.0 [9.5, 90.5]"
    assert table.loc["m", "avg"] == "55.0 [27.3, 82.7]"
    assert list(table.columns) == ["1-hop", "2-hop", "3-hop", "4-hop", "5-hop", "avg", "item_mean"]


def test_items_come_from_the_generator_or_a_sample_of_a_file(tmp_path):
    import json

    generated = logicmark_items(10, seed=4)
    assert [p.depth for p in generated].count(2) == 4  # the card's 40% 2-hop share
    assert logicmark_items(10, seed=4)[3].to_json() == generated[3].to_json()
    path = tmp_path / "logicmark"
    path.mkdir()
    (path / "test.jsonl").write_text("".join(json.dumps(to_record(p)) + "\n" for p in generated))
    assert [p.id for p in logicmark_items(20, seed=0, path=path)] == [p.id for p in generated]
    sampled = logicmark_items(3, seed=0, path=path)
    assert len(sampled) == 3 and [p.id for p in sampled] == sorted(p.id for p in sampled)


def test_model_rows_are_the_embedded_model_the_control_extras_and_sft_checkpoints_in_order():
    rows = [parse_model(e) for e in model_entries(extra_models=["gpt2"], sft_checkpoints=["/ckpt/sft-nl"], seed=2)]
    assert [r.name for r in rows] == [EMBEDDED, RANDOM_CONTROL, "gpt2", "SFT: /ckpt/sft-nl"]
    assert [r.kind for r in rows] == ["embedded", "random-init", "hf", "ckpt"]
    assert rows[1].seed == 2 and rows[2].path == "gpt2"
    assert [e["name"] for e in model_entries(random_control=False)] == [EMBEDDED]


# ------------------------------------------------------------------------------------ worked example


def test_derivation_chains_the_premises_that_prove_the_answer():
    problem = _problem(("a != d", "a = d"), 0, facts=("c = b", "a = b", "e = f", "d != c", "a = e"), depth=3)
    assert derivation(problem) == ["a = b", "c = b", "d != c"]
    equality = _problem(("f = b",), 0, facts=("c = b", "a = b", "e = f", "d != c", "a = e"), depth=3)
    assert derivation(equality) == ["e = f", "a = e", "a = b"]


def test_derivation_length_is_the_generators_hop_depth():
    for problem in generate_logicmark(Config(limit=20, seed=5)):
        premises = [f.text for f in problem.facts]
        assert len(derivation(problem)) == problem.depth == hop_depth(premises, problem.options[problem.answer_index])


def test_model_list_parameter_accepts_lists_and_comma_separated_strings():
    assert parse_model_list(None) == []
    assert parse_model_list("gpt2, /ckpt/sft-nl") == ["gpt2", "/ckpt/sft-nl"]
    assert parse_model_list(["gpt2"]) == ["gpt2"]


# ------------------------------------------------------------------------------------ the real model


@pytest.mark.slow
def test_real_model_log_likelihood_equals_log_softmax_of_its_logits(hf_backend):
    import torch

    problem = _problem(("a != c", "a = c"), 0)
    row = score([problem], hf_backend).iloc[0]
    tokenizer, model = hf_backend.tokenizer, hf_backend.model
    context_ids = tokenizer.encode("If:\na = b\nb != c\n\nThen", add_special_tokens=False)
    whole = tokenizer.encode("If:\na = b\nb != c\n\nThen a != c", add_special_tokens=False)
    continuation = whole[len(context_ids):]
    with torch.no_grad():
        logits = model(torch.tensor([whole])).logits[0].float()
    by_hand = sum(torch.log_softmax(logits[len(context_ids) - 1 + j], -1)[token].item()
                  for j, token in enumerate(continuation))
    assert row["tokens_0"] == len(continuation) >= 3  # " a", " !=" (or " !", "="), " c"
    assert row["loglik_0"] == pytest.approx(by_hand, abs=1e-4)


@pytest.mark.slow
def test_shared_context_kv_cache_gives_the_scores_of_separate_passes(hf_backend):
    from reference_paths import one_pass_per_pair

    class OnePassPerPair:  # lm-eval's way: one forward pass per (context, option)
        def loglikelihood(self, requests):
            return one_pass_per_pair(hf_backend, requests)

    problems = generate_logicmark(Config(limit=3, seed=11))
    shared_rows = score(problems, hf_backend)
    separate_rows = score(problems, OnePassPerPair(), model=shared_rows["model"].iloc[0])
    columns = [c for c in shared_rows.columns if c.startswith("loglik_")]
    assert max((shared_rows[columns] - separate_rows[columns]).abs().max()) < 1e-4
    assert shared_rows["tokens_0"].tolist() == separate_rows["tokens_0"].tolist()
    assert shared_rows["pred_token_mean"].tolist() == separate_rows["pred_token_mean"].tolist()


@pytest.mark.slow
def test_a_warm_rerun_reads_every_score_from_the_cache(hf_backend, model_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    (tmp_path / "models").symlink_to(model_cache / "models")  # the converted model, not converted again
    first = logicmark_run.run("smoke", threads=1)
    second = logicmark_run.run("smoke", threads=1)
    assert first.provenance.model_calls > 0
    assert second.provenance.model_calls == 0 and second.provenance.cache_hits == 4 * 5  # every option of 5 items
    pd.testing.assert_frame_equal(first.items, second.items)


def test_generated_items_are_stored_once_and_read_back_on_a_rerun(tmp_path, monkeypatch):
    import hashlib
    import json
    import sqlite3

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    items = logicmark_items(10, seed=4)
    assert items == generate_logicmark(Config(limit=10, seed=4))  # the generator's items, unchanged
    with sqlite3.connect(tmp_path / "store.sqlite") as db:  # as `sqlite3 store.sqlite` shows the stored set
        (key, text, count), = db.execute("SELECT key, problems, count FROM datasets WHERE name = 'logicmark'")
        assert count == 10
        lines = text.splitlines()
        edited = "".join(f"{line}\n" for line in [json.dumps(json.loads(lines[0]) | {"hypothesis": "edited"}), *lines[1:]])
        db.execute("UPDATE datasets SET problems = ?, sha256 = ? WHERE key = ?",
                   (edited, hashlib.sha256(edited.encode()).hexdigest(), key))  # a deliberate edit, hash and all
    assert logicmark_items(10, seed=4)[0].hypothesis == "edited"  # read, not generated again


def test_the_gemma_base_row_is_scored_on_its_first_items_beside_the_embedded_model():
    from finelogic.runs import logicmark

    class Gemma:
        requests = 0

        def loglikelihood(self, requests):
            Gemma.requests += len(requests)
            return [(-float(len(c)), 2, False) for _, c in requests]

    class Embedded:
        def loglikelihood(self, requests):
            return [(-1.0, 2, False) for _ in requests]

    run = logicmark.run("smoke", backends={logicmark.EMBEDDED: Embedded(), logicmark.GEMMA: Gemma()},
                        gemma=True, gemma_items=3)
    assert list(dict.fromkeys(run.items["model"])) == [logicmark.EMBEDDED, logicmark.GEMMA]
    assert (run.items["model"] == logicmark.GEMMA).sum() == 3 and Gemma.requests == 3 * 4
    assert "gemma" not in run.provenance.data
