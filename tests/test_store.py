"""The one store of model calls: it never hands one request another request's answer.

Each test breaks the cache the way an accident does (a hand edit, a cut blob, a damaged claim, a stopped
peer, a deleted file) and checks what the
user sees: the right answer for every request, the damaged record named, and no hang.
"""
from __future__ import annotations

import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from finelogic.models.base import BackendStats, GenerationConfig
from finelogic.models.cache import CachedBackend, request_key
from finelogic.store import StoreError

REPO = Path(__file__).resolve().parent.parent


class Echo:
    """Answers each conversation with ``answer to <its last message>``; records what it was asked."""

    def __init__(self):
        self.stats = BackendStats()
        self.asked: list[str] = []

    def generate(self, conversations, config=GenerationConfig()):
        self.stats.add(calls=1)
        self.asked += [c[-1]["content"] for c in conversations]
        return [f"answer to {c[-1]['content']}" for c in conversations]

    def loglikelihood(self, requests):
        self.stats.add(calls=1)
        self.asked += [x for _, x in requests]
        return [(-float(len(x)), len(x), False) for _, x in requests]

    def hidden_states(self, text, boundaries, *, layer=-1):
        self.stats.add(calls=1)
        self.asked.append(text)
        return np.array([[b, layer, len(text)] for b in boundaries], dtype=np.float32)


def chat(text):
    return [{"role": "user", "content": text}]


def sql(path, statement, params=()):
    """What ``sqlite3 <path> <statement>`` does."""
    with sqlite3.connect(path) as db:
        return db.execute(statement, params).fetchall()


@pytest.mark.parametrize("stored, why", [
    ('{"text": 42, "finish_reason": "stop"}', "the text must be a non-empty string, not 42"),
    ('{"text": "half', "not one JSON value"),
    ('["answer to x"]', "a generation must be {'text', 'finish_reason'}"),
])
def test_a_bad_generation_row_is_named_and_asked_again(tmp_path, caplog, stored, why):
    store = tmp_path / "store.sqlite"
    CachedBackend(Echo(), store, "m").generate([chat("x"), chat("y")])
    key = sql(store, "SELECT key FROM calls WHERE request LIKE '%\"x\"%'")[0][0]
    sql(store, "UPDATE calls SET value = ? WHERE key = ?", (stored, key))  # a hand edit or a foreign writer
    again = CachedBackend(Echo(), store, "m")
    with caplog.at_level(logging.WARNING):
        assert again.generate([chat("x"), chat("y")]) == ["answer to x", "answer to y"]
    assert again.backend.asked == ["x"]
    assert f"store {store}: calls row {key} (generate) is bad: {why}" in caplog.text
    assert sql(store, "SELECT value FROM calls WHERE key = ?", (key,)) == [
        ('{"text": "answer to x", "finish_reason": null}',)]  # stored again, right


@pytest.mark.parametrize("options", [1, 800])  # one asked, or enough that the store reads them all at once
@pytest.mark.parametrize("stored, why", [
    ('["-inf", 4, false]', "the log-prob must be a number (not NaN or +inf), not '-inf'"),
    ('[-4.0, 4, "no"]', "'greedy' must be true or false, not 'no'"),
    ('[-4.0, 4.5, false]', "the token count must be a whole number >= 0, not 4.5"),
    ('[-4.0, 4, false][-1.0, 1, true]', "more than one JSON value"),
])
def test_a_log_likelihood_of_the_wrong_type_is_recomputed_not_read_as_a_number(tmp_path, caplog, options, stored, why):
    store = tmp_path / "store.sqlite"
    pairs = [("ctx", " abc")] + [("ctx", f" option {i}") for i in range(options - 1)]
    expected = [(-float(len(x)), len(x), False) for _, x in pairs]
    assert CachedBackend(Echo(), store, "m").loglikelihood(pairs) == expected
    sql(store, "UPDATE calls SET value = ? WHERE request LIKE '%\" abc\"%'", (stored,))
    again = CachedBackend(Echo(), store, "m")
    assert again.loglikelihood(pairs) == expected
    assert again.backend.asked == [" abc"]
    assert why in caplog.text


def test_a_cut_array_blob_is_named_and_computed_again(tmp_path, caplog):
    store = tmp_path / "store.sqlite"
    first = CachedBackend(Echo(), store, "m").hidden_states("abcdef", [2, 4])
    (key, size), = sql(store, "SELECT key, length(value) FROM calls WHERE kind = 'hidden_states'")
    sql(store, "UPDATE calls SET value = substr(value, 1, ?)", (size // 2,))
    again = CachedBackend(Echo(), store, "m")
    assert again.hidden_states("abcdef", [2, 4]).tolist() == first.tolist() == [[2, -1, 6], [4, -1, 6]]
    assert again.backend.stats.calls == 1
    assert f"store {store}: calls row {key} (hidden_states) is bad: not a whole .npz" in caplog.text


def generate_beside(cached: CachedBackend, prompt: str, *, timeout: float) -> tuple[list, float]:
    """Ask ``cached`` for ``prompt`` from another thread, waiting at most ``timeout`` seconds: the answers it
    gave (none if it still waits) and the seconds waited."""
    answers, start = [], time.monotonic()
    worker = threading.Thread(target=lambda: answers.append(cached.generate([chat(prompt)])), daemon=True)
    worker.start()
    worker.join(timeout=timeout)
    return answers, time.monotonic() - start


def test_a_damaged_claim_is_named_and_taken_over_instead_of_hanging(tmp_path, caplog):
    store = tmp_path / "store.sqlite"
    cached = CachedBackend(Echo(), store, "m")
    key = request_key({"kind": "generate", "model": "m", "messages": chat("q"), "config": GenerationConfig().as_dict()})
    sql(store, "INSERT INTO claims VALUES (?, 'someone', 'not a pid', 'host', '-', 'soon')", (key,))
    answers, _ = generate_beside(cached, "q", timeout=20)
    assert answers == [["answer to q"]]
    assert f"store {store}: claims row {key} is damaged" in caplog.text
    assert sql(store, "SELECT count(*) FROM claims") == [(0,)]


HOLDER = """
import sys, time
from finelogic.models.cache import CachedBackend

class Slow:
    def generate(self, conversations, config=None):
        print("computing", flush=True)
        time.sleep(120)
        return ["late"]

CachedBackend(Slow(), sys.argv[1], "m", lease_seconds=1.5).generate([[{"role": "user", "content": "shared"}]])
"""


def test_a_stopped_peer_delays_another_run_by_at_most_its_lease_and_says_so(tmp_path, caplog):
    store, script = tmp_path / "store.sqlite", tmp_path / "holder.py"
    script.write_text(HOLDER)
    peer = subprocess.Popen([sys.executable, str(script), str(store)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert peer.stdout.readline().strip() == "computing"  # it holds the claim on "shared"
        peer.send_signal(signal.SIGSTOP)  # stopped, not dead: its pid is alive, its lease is not renewed
        cached = CachedBackend(Echo(), store, "m", lease_seconds=1.5)
        with caplog.at_level(logging.INFO):
            answers, waited = generate_beside(cached, "shared", timeout=30)
        assert answers == [["answer to shared"]] and cached.backend.asked == ["shared"]
        assert waited < 1.5 + 2.0  # the lease, plus polling
        assert f"waiting for 1 request(s) process {peer.pid}" in caplog.text
        assert f"taking over 1 request(s) claimed by process {peer.pid}" in caplog.text
    finally:
        peer.kill()
        peer.wait()


def test_a_file_that_is_not_a_store_is_refused_by_name(tmp_path):
    old = tmp_path / "cache.jsonl"
    old.write_text('{"key": "k", "request": {}, "response": {"text": "x"}}\n')
    with pytest.raises(StoreError, match=f"store {old}: not a usable SQLite store"):
        CachedBackend(Echo(), old, "m")


def test_finelogic_cache_says_where_the_store_is_and_what_it_holds(tmp_path, monkeypatch, capsys):
    from finelogic.book.cli import main
    from finelogic.config import store_path
    from finelogic.memo import Memo

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    CachedBackend(Echo(), store_path(), "openai:some/model").generate([chat("a"), chat("b")])
    with Memo("symbolic-verdicts", "f" * 64) as memo:
        memo["k"] = True
    assert main(["store"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines[0][0] == str(tmp_path / "store.sqlite")
    assert ["calls", "generate", "openai:some/model", "2"] in lines
    assert ["memos", "symbolic-verdicts", "f" * 16, "1"] in lines and ["claims", "0"] in lines


def test_a_store_deleted_while_a_run_has_it_open_is_made_again_and_keeps_the_later_answers(tmp_path, caplog):
    import shutil

    folder = tmp_path / "cache"
    cached = CachedBackend(Echo(), folder / "store.sqlite", "m")
    cached.generate([chat("before")])
    shutil.rmtree(folder)  # `rm -r $FINELOGIC_CACHE`, or a fresh rehearsal clearing its cache
    assert cached.generate([chat("after")]) == ["answer to after"]
    assert "was deleted or replaced; opening it afresh" in caplog.text
    again = CachedBackend(Echo(), folder / "store.sqlite", "m")
    assert again.generate([chat("after"), chat("before")]) == ["answer to after", "answer to before"]
    assert again.backend.asked == ["before"]  # "after" was kept in the new store, not in the deleted one


@pytest.mark.parametrize("host", ["another-host", "this-host"])
def test_a_claim_with_an_hour_long_lease_delays_another_run_by_at_most_its_own_lease(tmp_path, caplog, host):
    import socket

    store = tmp_path / "store.sqlite"
    cached = CachedBackend(Echo(), store, "m", lease_seconds=1.5)
    key = request_key({"kind": "generate", "model": "m", "messages": chat("q"), "config": GenerationConfig().as_dict()})
    peer = (os.getppid() if host == "this-host" else 4242, socket.gethostname() if host == "this-host" else host)
    # A live peer whose clock runs an hour ahead (or that wrote an hour-long lease), never renewing it.
    sql(store, "INSERT INTO claims VALUES (?, 'peer', ?, ?, '-', ?)", (key, *peer, time.time() + 3600))
    with caplog.at_level(logging.INFO):
        answers, waited = generate_beside(cached, "q", timeout=30)
    assert answers == [["answer to q"]] and cached.backend.asked == ["q"]
    assert 1.5 <= waited < 1.5 + 2.0  # this host's lease from first seeing the claim, plus polling
    assert re.search(f"waiting for 1 request\\(s\\) process {peer[0]} on {peer[1]} is computing \\(its lease ends in "
                     "[12] s", caplog.text)  # not in an hour
    assert f"taking over 1 request(s) claimed by process {peer[0]} on {peer[1]}" in caplog.text
    assert sql(store, "SELECT count(*) FROM claims") == [(0,)]


WRITER = """
import sys
from finelogic.models.cache import CachedBackend

class Echo:
    def generate(self, conversations, config=None):
        return ["answer to " + c[-1]["content"] for c in conversations]

CachedBackend(Echo(), sys.argv[1], "m").generate([[{"role": "user", "content": "a"}]])
"""


@pytest.fixture
def read_only_store(tmp_path):
    """A store holding one answer ("a"), its file then made read-only (immutable as well when run as root, whom
    file permissions do not stop); skipped where neither makes it so."""
    store = tmp_path / "store.sqlite"
    subprocess.run([sys.executable, "-c", WRITER, str(store)], check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    store.chmod(0o444)
    immutable = os.geteuid() == 0 and subprocess.run(["chattr", "+i", str(store)], capture_output=True).returncode == 0
    try:
        try:
            open(store, "r+b").close()
            pytest.skip("cannot make a file read-only here")
        except PermissionError:
            pass
        yield store
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(store)], check=True)
        store.chmod(0o644)


def test_a_read_only_store_is_read_and_a_write_to_it_names_the_file_and_what_to_do(read_only_store):
    cached = CachedBackend(Echo(), read_only_store, "m")
    assert cached.generate([chat("a")]) == ["answer to a"] and cached.backend.asked == []  # read from it
    with pytest.raises(StoreError, match=f"^store {re.escape(str(read_only_store))}: cannot be written .*"
                                         f"must be writable .*or set FINELOGIC_CACHE to a writable folder"):
        cached.generate([chat("b")])


def test_a_full_disk_names_the_store_and_says_to_free_space(tmp_path):
    store = tmp_path / "store.sqlite"
    cached = CachedBackend(Echo(), store, "m")
    cached.generate([chat("a")])
    pages = cached.store.query("PRAGMA page_count")[0][0]
    cached.store.query(f"PRAGMA max_page_count = {pages}")  # what SQLite does on a full disk: SQLITE_FULL
    with pytest.raises(StoreError, match=f"^store {re.escape(str(store))}: the disk is full .*free space on the disk "
                                         f"holding {re.escape(str(tmp_path))}"):
        cached.generate([chat("b" * 20000)])
    assert cached.generate([chat("a")]) == ["answer to a"]  # what it holds is still read


def test_finelogic_eval_on_a_read_only_store_prints_the_file_and_what_to_do_not_a_traceback(read_only_store,
                                                                                            monkeypatch, capsys):
    from finelogic.book.cli import main
    from model_fixtures import FakeOpenAI

    monkeypatch.setenv("FINELOGIC_CACHE", str(read_only_store.parent))
    server = FakeOpenAI().start()
    try:
        code = main(["eval", "--model", f"openai:fake-model@{server.url}", "--profile", "smoke", "--families",
                     "logicmark", "--out", str(read_only_store.parent / "out")])
    finally:
        server.stop()
    error = capsys.readouterr().err
    assert code == 1 and "Traceback" not in error
    assert f"error: store {read_only_store}: cannot be written" in error and "must be writable" in error
