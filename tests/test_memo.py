"""The on-disk memo of pure computations (finelogic.memo): what a rerun reads instead of recomputing."""
from __future__ import annotations

import json
import multiprocessing
import sqlite3

import pytest

from finelogic.memo import Memo, memo_key, source_version


def test_a_result_kept_by_one_run_is_read_by_the_next(tmp_path):
    with Memo("verdicts", "v1", tmp_path) as memo:
        memo[memo_key({"step": "A -> B", "facts": ["A"]})] = {"valid": True}
        memo["other"] = [1, 2]
    again = Memo("verdicts", "v1", tmp_path)
    assert again.get(memo_key({"facts": ["A"], "step": "A -> B"})) == {"valid": True}  # key order does not matter
    assert again["other"] == [1, 2] and len(again) == 2 and again.hits == 2
    assert again.get("missing") is None


def test_another_code_version_starts_empty(tmp_path):
    with Memo("verdicts", "v1", tmp_path) as memo:
        memo["k"] = 1
    with Memo("verdicts", "v2", tmp_path) as newer:
        assert newer.get("k") is None
        newer["k"] = 2
    assert Memo("verdicts", "v1", tmp_path).get("k") == 1 and Memo("verdicts", "v2", tmp_path).get("k") == 2


def test_a_memo_value_edited_into_something_not_json_is_named_and_recomputed(tmp_path, caplog):
    import sqlite3

    with Memo("m", "v", tmp_path) as memo:
        memo["a"], memo["b"] = {"valid": True}, {"valid": False}
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        db.execute("UPDATE memos SET value = '{\"valid\": tru' WHERE key = 'a'")
    again = Memo("m", "v", tmp_path)
    assert again.get("a") is None and again.get("b") == {"valid": False}
    assert "memos row a of m is bad" in caplog.text and str(tmp_path / "store.sqlite") in caplog.text
    again["a"] = {"valid": True}
    again.flush()
    assert Memo("m", "v", tmp_path).get("a") == {"valid": True}


def _write_many(folder, start):
    with Memo("shared", "v", folder) as memo:
        for i in range(start, start + 300):
            memo[str(i)] = i


def test_two_processes_append_without_losing_or_tearing_lines(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_many, args=(tmp_path, s)) for s in (0, 150)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    memo = Memo("shared", "v", tmp_path)
    assert sorted(int(k) for k in memo._entries) == list(range(450))
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        rows = db.execute("SELECT key, value FROM memos WHERE memo = 'shared'").fetchall()
    assert len(rows) == 450 and all(json.loads(value) == int(key) for key, value in rows)


def test_the_source_version_covers_what_a_module_imports_and_nothing_else():
    judges = source_version("finelogic.eval.judges")
    assert judges == source_version("finelogic.eval.judges")
    # the prover is imported by the judges (through the logic package): naming it too changes nothing
    assert judges == source_version("finelogic.eval.judges", "finelogic.logic.prover")
    assert judges != source_version("finelogic.logic.prover")
    # the LogicMark generator is not run by the judges: naming it gives another version
    assert judges != source_version("finelogic.eval.judges", "finelogic.data.generators.logicmark")


def test_a_source_version_of_a_module_that_does_not_exist_names_it():
    with pytest.raises(FileNotFoundError, match="finelogic.eval.nothing"):
        source_version("finelogic.eval.nothing")


def _soundness_gold_run(tmp_path, monkeypatch):
    from finelogic.runs import soundness
    from test_soundness import no_responses

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    return soundness.run("smoke", seed=0, accuracy_run=no_responses())


@pytest.mark.parametrize("value", ['"true"', "true", "42", "[true]", '[true, true, "ok"]', '["yes", true, "", ""]',
                                   '[false, true, "entailed", "symbolic"]'])
def test_kept_verdicts_of_the_wrong_shape_are_named_and_judged_again(tmp_path, monkeypatch, caplog, value):
    first = _soundness_gold_run(tmp_path, monkeypatch)
    assert first.quality["accuracy"].tolist() == [1.0, 1.0]
    store = tmp_path / "cache" / "store.sqlite"
    with sqlite3.connect(store) as db:
        edited = db.execute("UPDATE memos SET value = ? WHERE memo = 'symbolic-verdicts'", (value,)).rowcount
        key = db.execute("SELECT key FROM memos WHERE memo = 'symbolic-verdicts' LIMIT 1").fetchone()[0]
    assert edited > 40
    again = _soundness_gold_run(tmp_path, monkeypatch)
    assert again.quality["accuracy"].tolist() == [1.0, 1.0]  # judged again, not read as a verdict
    assert f"store {store}: memos row {key} of symbolic-verdicts is bad" in caplog.text
    with sqlite3.connect(store) as db:  # the bad rows were replaced by the verdicts worked out again
        assert db.execute("SELECT count(*) FROM memos WHERE memo = 'symbolic-verdicts' AND value = ?",
                          (value,)).fetchone()[0] == 0


@pytest.mark.parametrize("edit", ["json_remove(value, '$.problems[#-1]')", "json_set(value, '$.items[0][3]', 'yes')",
                                  "json_remove(value, '$.items[0][5]')"])
def test_a_kept_judge_quality_set_cut_short_or_edited_is_named_and_made_again(tmp_path, monkeypatch, caplog, edit):
    first = _soundness_gold_run(tmp_path, monkeypatch)
    store = tmp_path / "cache" / "store.sqlite"
    with sqlite3.connect(store) as db:
        assert db.execute(f"UPDATE memos SET value = {edit} WHERE memo = 'soundness-quality-set'").rowcount == 1
        key, = db.execute("SELECT key FROM memos WHERE memo = 'soundness-quality-set'").fetchone()
    again = _soundness_gold_run(tmp_path, monkeypatch)
    assert f"store {store}: memos row {key} of soundness-quality-set is bad" in caplog.text
    assert again.labels.to_dict() == first.labels.to_dict()
    assert again.quality["accuracy"].tolist() == [1.0, 1.0]


def _checks():
    from finelogic.baselines.logic_lm import translation_problem
    from finelogic.eval.probing import predictions_problem
    from finelogic.eval.probing_data import kept_problem
    from finelogic.runs.supervision import training_data_problem

    return [
        ("baseline-translations", translation_problem,
         {"formulas": {"fact1": "{A}{a}", "hypothesis": "{B}{a}"}, "errors": [], "label": "PROVED", "error": None},
         {"formulas": {"fact1": "{A}{a}"}, "errors": [], "label": "maybe", "error": None}),
        ("probing", kept_problem, [[2, [["int3: {B}{a}", 1], ["int4: {C}{b}", 0]]]], [[2, [["int3: {B}{a}", "yes"]]]]),
        ("probing-probes", predictions_problem, [0, 1, 1, 0], [0, 1, "1"]),
        ("supervision-training-data", training_data_problem, {"texts": ["fact1 -> int1: A"], "lines": 1, "failures": []},
         {"texts": "fact1 -> int1: A", "lines": 1, "failures": []}),
    ]


@pytest.mark.parametrize("index", range(4))
def test_every_memo_kept_by_a_run_names_and_drops_a_value_of_the_wrong_shape(tmp_path, caplog, index):
    name, check, good, bad = _checks()[index]
    with Memo(name, "v", tmp_path, check=check) as memo:
        memo["good"], memo["bad"] = good, bad
    again = Memo(name, "v", tmp_path, check=check)
    assert again.get("good") == good and again.get("bad") is None
    assert f"store {tmp_path / 'store.sqlite'}: memos row bad of {name} is bad" in caplog.text
    assert "memos row good" not in caplog.text
