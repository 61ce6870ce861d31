"""The SQLite store (:mod:`finelogic.store`) against the JSONL cache it replaced, in one run: ratios.

Both caches wrap the same scripted backend (answers at once, so only the cache is timed):

* **cached rerun**: ``--requests`` generations (2,000) and ``--scores`` log-likelihoods (20,000, a
  LogicMark-like rerun) stored once, then asked again by a fresh wrapper (a new run: the store opened, or
  the JSONL file read whole, then every answer a hit, in one call per verb and then 16 generations per call
  as the accuracy evaluation asks); the best of ``--repeats`` (5) tries of each part, old and new taking
  turns within each try;
* **8-way concurrent writes**: ``--workers`` processes (8) started together, each asking its own
  ``--requests / workers`` generations (``disjoint``) or all asking the same ``--requests`` (``shared``:
  claims decide who computes what), answers stored one by one as they arrive (``on_result``, as the OpenAI
  backend stores them); wall time from the start signal until the last process is done.

The JSONL cache is the one of git revision ``--baseline`` (default ``7c40b26``, the last before the store),
loaded from git history into its own module; run from a checkout. Old and new alternate, so machine load
(printed) affects both alike.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_store.py [--requests 2000] [--workers 8]``

Measured 2026-12-02 15:37 UTC (commit 37e4c43, defaults, load average 1.8 before and 2.7 after: a few seconds
after a book build) on the 2-core machine, old / new seconds: opening the cache 0.068 / 0.002 (30x); 2,000
generations in one call 0.031 / 0.043 (0.72x); 20,000 log-likelihoods in one call 0.069 / 0.176 (0.39x); 2,000
generations 16 per call 0.038 / 0.056 (0.67x); the whole cached rerun 0.206 / 0.277 (**0.74x**: 71 ms more,
the SQL and the type check of every answer); 8 processes writing their own shares 0.798 / 0.509 (1.57x), all
asking the same 2,000 1.724 / 1.305 (1.32x). For scale: the whole tiny book rebuilt from a warm store right
after took 84 s, so the store's extra time on a cached rerun is under 0.1% of it.
"""
from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODULE_NAME = "finelogic_baseline_cache"


class Scripted:
    """Answers ``answer to <last message>`` at once, each reported through ``on_result`` as it is made."""

    def __init__(self) -> None:
        from finelogic.models.base import BackendStats

        self.stats = BackendStats()

    def generate(self, conversations, config=None, on_result=None):
        self.stats.add(calls=1)
        texts = [f"answer to {c[-1]['content']}" for c in conversations]
        if on_result is not None:
            for i, text in enumerate(texts):
                on_result(i, text)
        return texts

    def loglikelihood(self, requests):
        self.stats.add(calls=1)
        return [(-float(len(x)), len(x), False) for _, x in requests]


def baseline_module(revision: str) -> Any:
    """``finelogic/models/cache.py`` as it was at ``revision``, imported under its own name."""
    if MODULE_NAME in sys.modules:
        return sys.modules[MODULE_NAME]
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:finelogic/models/cache.py"],
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / f"{MODULE_NAME}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    spec.loader.exec_module(module)
    return module


def wrapper(kind: str, folder: Path, revision: str) -> Any:
    """A fresh CachedBackend of ``kind`` (``old``: the JSONL cache; ``new``: the store) over ``folder``."""
    if kind == "old":
        return baseline_module(revision).CachedBackend(Scripted(), folder / "cache.jsonl", "bench")
    from finelogic.models.cache import CachedBackend
    from finelogic.store import Store

    return CachedBackend(Scripted(), Store(folder / "store.sqlite"), "bench")  # a connection of its own


def chats(names: list[str]) -> list[list[dict[str, str]]]:
    return [[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": name}] for name in names]


def cached_rerun(folders: dict[str, Path], revision: str, requests: int, scores: int,
                 repeats: int) -> dict[str, list[float]]:
    """Per cache kind, seconds for a fresh wrapper (a new run) to open its cache, answer every generation
    from it in one call, every log-likelihood in one call, then every generation again 16 per call: the
    best of ``repeats`` tries each, the kinds taking turns within each try (so load drift hits both)."""
    asked = chats([f"question {i}: " + "premise. " * 40 for i in range(requests)])
    pairs = [(f"context {i // 4}: " + "fact. " * 60, f" option {i % 4}") for i in range(scores)]
    for kind, folder in folders.items():
        filling = wrapper(kind, folder, revision)
        filling.generate(asked)
        filling.loglikelihood(pairs)
    best = {kind: [float("inf")] * 4 for kind in folders}
    for _ in range(repeats):
        for kind, folder in folders.items():
            start = time.perf_counter()
            again = wrapper(kind, folder, revision)
            opened = time.perf_counter()
            assert again.generate(asked)[-1] == f"answer to {asked[-1][-1]['content']}"
            middle = time.perf_counter()
            assert len(again.loglikelihood(pairs)) == scores
            end = time.perf_counter()
            for at in range(0, requests, 16):  # as the accuracy evaluation asks: a batch at a time
                again.generate(asked[at:at + 16])
            small = time.perf_counter()
            assert again.backend.stats.calls == 0
            times = (opened - start, middle - opened, end - middle, small - end)
            best[kind] = [min(b, t) for b, t in zip(best[kind], times)]
    return best


def _worker(kind: str, folder: str, revision: str, names: list[str], go: Any, ready: Any) -> None:
    cached = wrapper(kind, Path(folder), revision)
    ready.release()
    go.wait()
    cached.generate(chats(names))


def concurrent_writes(kind: str, folder: Path, revision: str, requests: int, workers: int, shared: bool) -> float:
    """Seconds from the start signal until ``workers`` processes have asked and stored their requests."""
    names = [f"item {i}" for i in range(requests)]
    parts = [names if shared else names[w::workers] for w in range(workers)]
    context = multiprocessing.get_context("spawn")
    go, ready = context.Event(), context.Semaphore(0)
    processes = [context.Process(target=_worker, args=(kind, str(folder), revision, part, go, ready))
                 for part in parts]
    for process in processes:
        process.start()
    for _ in processes:
        ready.acquire()  # every process has imported and opened its cache
    start = time.perf_counter()
    go.set()
    for process in processes:
        process.join()
    seconds = time.perf_counter() - start
    if any(p.exitcode for p in processes):
        raise RuntimeError(f"{kind}: a worker failed")
    check = wrapper(kind, folder, revision)
    check.generate(chats(names))
    assert check.backend.stats.calls == 0, f"{kind}: not every answer was stored"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--scores", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", default="7c40b26", help="git revision of the JSONL cache")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    rows = []
    with tempfile.TemporaryDirectory() as root:
        folders = {kind: Path(root) / f"rerun-{kind}" for kind in ("old", "new")}
        for folder in folders.values():
            folder.mkdir()
        timings = cached_rerun(folders, args.baseline, args.requests, args.scores, args.repeats)
        parts = ("opening the cache", f"{args.requests} generations in one call",
                 f"{args.scores} log-likelihoods in one call", f"{args.requests} generations, 16 per call")
        for i, what in enumerate(parts):
            rows.append((f"cached rerun: {what}", timings["old"][i], timings["new"][i]))
        rows.append(("cached rerun: all four", sum(timings["old"]), sum(timings["new"])))
        for shared in (False, True):
            seconds = {}
            for kind in ("old", "new"):
                folder = Path(root) / f"writes-{kind}-{shared}"
                folder.mkdir()
                seconds[kind] = concurrent_writes(kind, folder, args.baseline, args.requests, args.workers, shared)
            label = "the same" if shared else "its own share of"
            rows.append((f"{args.workers} processes, each asking {label} {args.requests} generations",
                         seconds["old"], seconds["new"]))
    print(f"{'':62s} {'JSONL (s)':>10s} {'store (s)':>10s} {'store speed-up':>15s}")
    for label, old, new in rows:
        print(f"{label:62s} {old:10.3f} {new:10.3f} {old / new:14.2f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
