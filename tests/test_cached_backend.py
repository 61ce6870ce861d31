"""The response cache in front of an in-process backend: reruns are free, nothing is duplicated.

The answers live in the one SQLite store; the tests look inside it with plain SQL, as a user would with
``sqlite3``."""
from __future__ import annotations

import sqlite3

import numpy as np

from finelogic.models.base import BackendStats, GenerationConfig
from finelogic.models.cache import CachedBackend


class CountingBackend:
    """Answers each conversation with its last message reversed; counts what it was asked."""

    def __init__(self):
        self.stats = BackendStats()
        self.asked: list[str] = []
        self.tokenizer = "the-tokenizer"

    def generate(self, conversations, config=GenerationConfig()):
        self.stats.add(calls=1)
        self.asked += [c[-1]["content"] for c in conversations]
        return [c[-1]["content"][::-1] for c in conversations]

    def loglikelihood(self, requests):
        self.stats.add(calls=1)
        return [(-float(len(x)), len(x), False) for _, x in requests]


def _conv(text):
    return [{"role": "user", "content": text}]


def _rows(path, sql="SELECT key FROM calls"):
    """What ``sqlite3 <path> <sql>`` prints, as a list of rows."""
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def test_second_run_is_answered_from_disk_without_model_calls(tmp_path):
    path = tmp_path / "cache.sqlite"
    first = CachedBackend(CountingBackend(), path, "m")
    assert first.generate([_conv("abc"), _conv("xy")]) == ["cba", "yx"]
    again = CachedBackend(CountingBackend(), path, "m")  # a new process: only the file is shared
    assert again.generate([_conv("xy"), _conv("abc")]) == ["yx", "cba"]
    assert again.backend.stats.calls == 0 and again.stats.cache_hits == 2
    assert len(_rows(path)) == 2


def test_only_misses_reach_the_model_and_duplicates_are_computed_once(tmp_path):
    cached = CachedBackend(CountingBackend(), tmp_path / "c.sqlite", "m", chunk_size=2)
    cached.generate([_conv("a")])
    out = cached.generate([_conv("a"), _conv("b"), _conv("b"), _conv("c"), _conv("d")])
    assert out == ["a", "b", "b", "c", "d"]
    assert cached.backend.asked == ["a", "b", "c", "d"]  # 'a' once, 'b' once despite appearing twice
    assert cached.backend.stats.calls == 3  # chunks: [a], [b, c], [d]
    keys = [key for key, in _rows(tmp_path / "c.sqlite")]
    assert len(keys) == len(set(keys)) == 4


def test_models_and_configs_never_share_answers(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedBackend(CountingBackend(), path, "model-a").generate([_conv("q")])
    other_model = CachedBackend(CountingBackend(), path, "model-b")
    other_model.generate([_conv("q")])
    other_config = CachedBackend(CountingBackend(), path, "model-a")
    other_config.generate([_conv("q")], GenerationConfig(max_new_tokens=7))
    assert other_model.backend.stats.calls == 1 and other_config.backend.stats.calls == 1


def test_unseeded_sampling_is_never_cached(tmp_path):
    cached = CachedBackend(CountingBackend(), tmp_path / "c.sqlite", "m")
    sampled = GenerationConfig(temperature=0.7, top_p=0.9, seed=None)
    cached.generate([_conv("q")], sampled)
    cached.generate([_conv("q")], sampled)
    assert cached.backend.stats.calls == 2 and _rows(tmp_path / "c.sqlite") == []


def test_loglikelihood_is_cached_and_attributes_pass_through(tmp_path):
    cached = CachedBackend(CountingBackend(), tmp_path / "c.sqlite", "m")
    assert cached.loglikelihood([("ctx", " abc")]) == [(-4.0, 4, False)]
    assert cached.loglikelihood([("ctx", " abc")]) == [(-4.0, 4, False)]
    assert cached.backend.stats.calls == 1
    assert cached.tokenizer == "the-tokenizer"


def test_loglikelihood_keys_are_the_canonical_request_keys(tmp_path):
    from finelogic.models.cache import _loglikelihood_keys, request_key

    pairs = [("If:\na = b\n\nThen", " a = b"), ('quote " and é', " \\ \t"), ("If:\na = b\n\nThen", " a != b")]
    assert _loglikelihood_keys("ckpt:/m é:1", pairs) == [
        request_key({"kind": "loglikelihood", "model": "ckpt:/m é:1", "context": c, "continuation": x}) for c, x in pairs]


class StatesBackend:
    """Hidden 'states': one row per boundary, the boundary repeated over 3 dims; counts its calls."""

    def __init__(self):
        self.stats = BackendStats()

    def hidden_states(self, text, boundaries, *, layer=-1, suffixes=None):
        self.stats.add(calls=1)
        rows = np.array([[b, b + layer, len(text)] for b in boundaries], dtype=np.float32)
        return [rows[i:i + 1] for i in range(len(boundaries))] if suffixes is not None else rows


def test_hidden_states_are_cached_as_arrays_per_request(tmp_path):
    first = CachedBackend(StatesBackend(), tmp_path / "c.sqlite", "m")
    plain = first.hidden_states("abcdef", [2, 4], layer=-1)
    nested = first.hidden_states("abcdef", [2, 4], layer=-1, suffixes=["x", "y"])
    assert plain.tolist() == [[2, 1, 6], [4, 3, 6]] and [a.tolist() for a in nested] == [[[2, 1, 6]], [[4, 3, 6]]]
    again = CachedBackend(StatesBackend(), tmp_path / "c.sqlite", "m")  # a new process: only the files are shared
    assert again.hidden_states("abcdef", [2, 4], layer=-1).tolist() == plain.tolist()
    assert [a.tolist() for a in again.hidden_states("abcdef", [2, 4], layer=-1, suffixes=["x", "y"])] == \
        [a.tolist() for a in nested]
    assert again.backend.stats.calls == 0 and again.stats.cache_hits == 2
    again.hidden_states("abcdef", [2, 4], layer=0)  # another layer is another request
    assert again.backend.stats.calls == 1
    assert _rows(tmp_path / "c.sqlite", "SELECT kind, count(*) FROM calls GROUP BY kind") == [("hidden_states", 3)]


def test_a_loader_is_called_only_when_something_is_not_cached(tmp_path):
    opened = []

    def load():
        opened.append(1)
        return CountingBackend()

    CachedBackend(load, tmp_path / "c.sqlite", "m").generate([_conv("abc")])
    warm = CachedBackend(load, tmp_path / "c.sqlite", "m")
    assert warm.generate([_conv("abc")]) == ["cba"] and not warm.loaded and opened == [1]
    assert warm.generate([_conv("new")]) == ["wen"] and warm.loaded and opened == [1, 1]


def test_completions_keep_their_finish_reason_through_the_cache(tmp_path):
    from finelogic.models.base import Completion

    class Cut(CountingBackend):
        def generate(self, conversations, config=GenerationConfig()):
            return [Completion(text, "length") for text in super().generate(conversations, config)]

    CachedBackend(Cut(), tmp_path / "c.sqlite", "m").generate([_conv("abc")])
    answer, = CachedBackend(Cut(), tmp_path / "c.sqlite", "m").generate([_conv("abc")])
    assert answer == "cba" and answer.finish_reason == "length"


def test_a_contexts_continuations_are_never_split_between_chunks(tmp_path):
    """The backend scores a context's options from one shared KV cache: a chunk boundary must not cut them."""
    seen = []

    class Recording(CountingBackend):
        def loglikelihood(self, requests):
            seen.append(sorted({c for c, _ in requests}))
            return super().loglikelihood(requests)

    cached = CachedBackend(Recording(), tmp_path / "c.sqlite", "m", chunk_size=5)
    cached.loglikelihood([("a", " 1")])  # one option of context a is cached already
    requests = [(ctx, f" {k}") for ctx in ("a", "b", "c") for k in range(3)]
    assert cached.loglikelihood(requests) == [(-2.0, 2, False)] * 9
    assert seen[1:] == [["a", "b"], ["c"]]  # a's two misses and b's three together, then c: none split


class BatchStatesBackend(StatesBackend):
    """StatesBackend with the batched form too; records the texts of every batch it is sent."""

    def __init__(self):
        super().__init__()
        self.batches: list[list[str]] = []

    def hidden_states_batch(self, requests):
        self.batches.append([r.text for r in requests])
        self.stats.add(calls=1)
        return [StatesBackend.hidden_states(self, r.text, r.boundaries, **r.options) for r in requests]


def test_batched_hidden_states_send_only_misses_in_chunks_and_keep_the_order(tmp_path):
    from finelogic.models.base import StatesRequest

    cached = CachedBackend(BatchStatesBackend(), tmp_path / "c.sqlite", "m", chunk_size=2)
    single = cached.hidden_states("abcdef", [2, 4], layer=-1)  # the single form is a batch of one
    requests = [StatesRequest("abcdef", [2, 4], {"layer": -1}), StatesRequest("xyz", [1], {"layer": 0}),
                StatesRequest("uvwxyz", [3], {"layer": -1, "suffixes": ["!"]}),
                StatesRequest("xyz", [1], {"layer": 0}), StatesRequest("pq", [1, 2], {"layer": -1})]
    answers = cached.hidden_states_batch(requests)
    # the first request was cached; the duplicate "xyz" is computed once; misses go two per call
    assert cached.backend.batches == [["abcdef"], ["xyz", "uvwxyz"], ["pq"]]
    assert answers[0].tolist() == single.tolist() == [[2, 1, 6], [4, 3, 6]]
    assert answers[1].tolist() == answers[3].tolist() == [[1, 1, 3]]
    assert [a.tolist() for a in answers[2]] == [[[3, 2, 6]]] and answers[4].tolist() == [[1, 0, 2], [2, 1, 2]]
    again = CachedBackend(BatchStatesBackend(), tmp_path / "c.sqlite", "m")  # a new process: only the files
    stored = again.hidden_states_batch(requests)
    assert [stored[k].tolist() for k in (0, 1, 3, 4)] == [answers[k].tolist() for k in (0, 1, 3, 4)]
    assert again.backend.batches == [] and again.stats.cache_hits == 5
    # the single and the batched form share keys: the one call above is served from disk here
    assert again.hidden_states("uvwxyz", [3], layer=-1, suffixes=["!"])[0].tolist() == [[3, 2, 6]]


class SlowBackend(CountingBackend):
    """A CountingBackend whose every call takes ``seconds`` and records when it ran."""

    def __init__(self, seconds=0.6):
        super().__init__()
        self.seconds, self.intervals = seconds, []

    def generate(self, conversations, config=GenerationConfig()):
        import time

        start = time.monotonic()
        time.sleep(self.seconds)
        self.intervals.append((start, time.monotonic()))
        return super().generate(conversations, config)


def _in_threads(*calls):
    import threading

    results = [None] * len(calls)
    threads = [threading.Thread(target=lambda i=i, c=c: results.__setitem__(i, c())) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_two_runs_asking_different_requests_of_one_cache_compute_at_the_same_time(tmp_path):
    """One store file per model: two notebooks asking the embedded model different things must not take turns."""
    path = tmp_path / "c.sqlite"
    a, b = CachedBackend(SlowBackend(), path, "m"), CachedBackend(SlowBackend(), path, "m")
    out = _in_threads(lambda: a.generate([_conv("first"), _conv("second")]),
                      lambda: b.generate([_conv("third")]))
    assert out == [["tsrif", "dnoces"], ["driht"]]
    (a_start, a_end), (b_start, b_end) = a.backend.intervals[0], b.backend.intervals[0]
    assert a_start < b_end and b_start < a_end  # the two model calls overlapped
    assert len(_rows(path)) == 3


def test_a_request_another_run_is_computing_is_waited_for_and_read_not_sent_again(tmp_path):
    path = tmp_path / "c.sqlite"
    a, b = CachedBackend(SlowBackend(1.0), path, "m"), CachedBackend(SlowBackend(), path, "m")
    import threading
    import time

    first = threading.Thread(target=lambda: a.generate([_conv("shared"), _conv("own")]))
    first.start()
    time.sleep(0.3)  # a has claimed both and is computing them
    assert b.generate([_conv("shared")]) == ["derahs"]
    first.join(timeout=30)
    assert a.backend.asked == ["shared", "own"] and b.backend.asked == []  # asked once in all
    assert b.stats.cache_hits == 1
    assert _rows(path, "SELECT * FROM claims") == []  # no claim left behind


CRASHER = """
import os, sys
from finelogic.models.cache import CachedBackend

class Dies:
    def generate(self, conversations, config=None):
        os._exit(3)  # killed mid-computation: its claim stays behind

CachedBackend(Dies(), sys.argv[1], "m").generate([[{"role": "user", "content": "orphan"}]])
"""


def test_a_claim_left_by_a_process_that_died_is_taken_over(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    path, script = tmp_path / "c.sqlite", tmp_path / "crash.py"
    script.write_text(CRASHER)
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(script), str(path)], env={"PYTHONPATH": str(repo)}, timeout=120)
    assert done.returncode == 3
    assert len(_rows(path, "SELECT * FROM claims")) == 1  # the dead process's claim
    survivor = CachedBackend(CountingBackend(), path, "m")
    assert _in_threads(lambda: survivor.generate([_conv("orphan")])) == [["nahpro"]]
    assert survivor.backend.asked == ["orphan"]


def test_a_checkpoint_moved_with_its_files_keeps_its_cache_identity_and_a_retrained_one_does_not(tmp_path):
    import os
    import shutil

    from finelogic.models.spec import parse_model

    first = tmp_path / "a" / "SFT-NL"
    first.mkdir(parents=True)
    (first / "config.json").write_text("{}")
    (first / "model.safetensors").write_bytes(b"weights")
    before = parse_model(f"ckpt:{first}").model_id
    moved = tmp_path / "elsewhere" / "SFT-NL"
    moved.parent.mkdir()
    shutil.move(first, moved)  # a rename keeps the files' times
    assert parse_model(f"ckpt:{moved}").model_id == before
    (moved / "model.safetensors").write_bytes(b"retrained")
    os.utime(moved / "model.safetensors", ns=(1, 1))
    assert parse_model(f"ckpt:{moved}").model_id != before


class CappedBackend(CountingBackend):
    """Writes ``<message> done`` one word per token and stops; a cap smaller than that cuts the words."""

    def generate(self, conversations, config=GenerationConfig()):
        from finelogic.models.base import Completion

        self.stats.add(calls=1)
        self.asked += [c[-1]["content"] for c in conversations]
        out = []
        for c in conversations:
            words = f"{c[-1]['content']} done".split()
            cut = len(words) > config.max_new_tokens
            out.append(Completion(" ".join(words[:config.max_new_tokens]), "length" if cut else "stop"))
        return out


def test_raising_the_token_cap_computes_only_the_answers_the_smaller_cap_cut_off(tmp_path):
    path = tmp_path / "c.sqlite"
    short, long = _conv("a b"), _conv("a b c d e f g")  # 3 and 8 tokens with "done"
    first = CachedBackend(CappedBackend(), path, "m")
    small = GenerationConfig(max_new_tokens=4, stop=("done",))
    assert [c.finish_reason for c in first.generate([short, long], small)] == ["stop", "length"]
    again = CachedBackend(CappedBackend(), path, "m")  # a later run with a larger cap
    large = GenerationConfig(max_new_tokens=16, stop=("done",))
    answers = again.generate([short, long], large)
    assert answers == ["a b done", "a b c d e f g done"]
    assert again.backend.asked == ["a b c d e f g"]  # the short one ended within 4 tokens: not asked again
    assert answers[0].finish_reason == "stop" and again.stats.cache_hits == 1
    # stored under the larger cap's own key too: a third run asks nothing
    third = CachedBackend(CappedBackend(), path, "m")
    assert third.generate([short, long], large) == answers and third.backend.asked == []
    assert len(_rows(path)) == 4


def test_a_larger_cap_reuses_nothing_that_differs_in_more_than_the_cap(tmp_path):
    path = tmp_path / "c.sqlite"
    short = _conv("a b")
    CachedBackend(CappedBackend(), path, "m").generate([short], GenerationConfig(max_new_tokens=4, stop=("done",)))
    for model, config in [("m", GenerationConfig(max_new_tokens=16, stop=("x",))),  # other stop strings
                          ("m", GenerationConfig(max_new_tokens=16, temperature=0.7, seed=1)),  # sampled
                          ("other", GenerationConfig(max_new_tokens=16, stop=("done",))),  # another model
                          ("m", GenerationConfig(max_new_tokens=2, stop=("done",)))]:  # a smaller cap
        cached = CachedBackend(CappedBackend(), path, model)
        cached.generate([short], config)
        assert cached.backend.asked == ["a b"], (model, config)


def test_runs_hold_one_opened_model_at_a_time_and_let_each_go_when_done(tmp_path):
    """A run evaluating several in-process models one after another held every one it had opened until it
    ended (five fine-tuned 135M models and the base: 9.3 GB in one test process). Each opened model is now
    let go after its last request, so it is freed (no reference left), and opened again only for a miss."""
    import gc
    import weakref

    from finelogic.runs import accuracy

    alive, most = set(), [0]

    def opener(name):
        def load():
            model = CountingBackend()
            model.tokenizer = None
            alive.add(name)
            most[0] = max(most[0], len(alive))
            weakref.finalize(model, alive.discard, name)
            return model
        return load

    entries = ("embedded", "random-init:1", "random-init:2")
    backends = {e: CachedBackend(opener(e), tmp_path / "store.sqlite", e) for e in entries}
    handed = dict(backends)
    run = accuracy.run("smoke", seed=0, backends=backends, models=entries)
    gc.collect()
    assert most[0] == 1 and alive == set()
    assert not any(b.loaded for b in handed.values())
    assert set(run.records["model"]) == {"SmolLM2-135M-Instruct", "SmolLM2-135M (random init, seed 1)",
                                         "SmolLM2-135M (random init, seed 2)"}
    # Let go, not lost: a rerun is answered from the store without opening any of them.
    again = accuracy.run("smoke", seed=0, models=entries,
                         backends={e: CachedBackend(opener(e), tmp_path / "store.sqlite", e) for e in entries})
    assert most[0] == 1 and again.records["response"].tolist() == run.records["response"].tolist()
