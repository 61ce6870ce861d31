"""The on-disk memo of pure computations (finelogic.memo): what a rerun reads instead of recomputing."""
from __future__ import annotations

import json
import multiprocessing

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


def test_a_torn_last_line_is_skipped_and_closed_off(tmp_path, caplog):
    with Memo("m", "v", tmp_path) as memo:
        memo["a"] = 1
    path = next(tmp_path.glob("m-*.jsonl"))
    with path.open("a") as handle:
        handle.write('{"key": "b", "val')  # a crash mid-write
    memo = Memo("m", "v", tmp_path)
    assert memo.get("a") == 1 and "b" not in memo
    assert "unreadable line" in caplog.text and str(path) in caplog.text
    memo["c"] = 3
    memo.flush()
    assert Memo("m", "v", tmp_path).get("c") == 3
    assert [json.loads(l)["key"] for l in path.read_text().splitlines() if l.startswith('{"key": "a"') or
            l.startswith('{"key": "c"')] == ["a", "c"]


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
    lines = next(tmp_path.glob("shared-*.jsonl")).read_text().splitlines()
    assert all(json.loads(line)["value"] == int(json.loads(line)["key"]) for line in lines)


def test_the_source_version_changes_with_the_code_it_names():
    assert source_version("logic") == source_version("logic")
    assert source_version("logic") != source_version("eval")
