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
