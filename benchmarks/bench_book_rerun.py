"""The tiny book rerun from a warm cache: this checkout against an earlier revision, in one run: ratios.

Each revision runs in its own git worktree with its own ``FINELOGIC_CACHE`` and results, so neither reads
the other's answers. First each is made whole once (``finelogic run --profile tiny --jobs 2``: from an empty
cache about 13-17 minutes each on 2 cores; skipped in seconds when the worktree's notebooks are already
there). Then, taking turns, old and new:

* **cached rerun**: ``--force``: every notebook executed again, every model answer read from the cache
  (``--repeats`` times each, 3);
* **nothing changed**: the runner finds every notebook current and skips it (2 times each).

The baseline is ``--baseline`` (default ``7c40b26``, the last revision before the SQLite store). Old and new
alternate, so machine load (printed with each time) affects both alike.

Run from a checkout: ``.venv/bin/python benchmarks/bench_book_rerun.py [--work /tmp/bench-book]
[--data-dir DIR]`` (``DIR``: the real benchmark files, as ``FINELOGIC_DATA_DIR``; ``--old-tree/--old-cache/--new-tree/--new-cache`` take worktrees and caches
made earlier).

Measured 2026-12-03 12:52-12:59 UTC by the same steps in a shell script, new = commit 5c2f7e1, a study unit
generating beside (load 3-4), seconds old / new: cached rerun 62.5 / 48.9, 64.9 / 58.7, 66.8 / 57.2 (mean
64.7 / 54.9: **1.18x**, the new book with one notebook more, the claims page); nothing changed 4.1 / 2.6,
4.0 / 2.7 (1.55x). This script, right after (13:30 UTC, new = b71258e, the same worktrees and caches,
``--repeats 1``, load 3.7-3.9 with the study unit beside): cached rerun 68.8 / 63.2 s (1.09x), nothing changed
5.1 / 2.7 s (1.90x).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def worktree(path: Path, revision: str) -> Path:
    if not (path / ".git").exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), revision], cwd=REPO, check=True,
                       capture_output=True)
    return path


def run_book(tree: Path, cache: Path, data_dir: str | None, *extra: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "FINELOGIC_CACHE": str(cache),
           "FINELOGIC_RESULTS": str(tree / "results"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MPLBACKEND": "Agg"}
    if data_dir:
        env["FINELOGIC_DATA_DIR"] = str(Path(data_dir).resolve())
    command = [sys.executable, "-m", "finelogic.book.cli", "run", "--profile", "tiny", "--jobs", "2", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{tree}: finelogic run {' '.join(extra)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="7c40b26")
    parser.add_argument("--work", default="/tmp/finelogic-bench-book", help="worktrees and caches go here")
    parser.add_argument("--old-tree"), parser.add_argument("--old-cache")
    parser.add_argument("--new-tree"), parser.add_argument("--new-cache")
    parser.add_argument("--data-dir", default=os.environ.get("FINELOGIC_DATA_DIR"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(args.work)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()
    old = (Path(args.old_tree) if args.old_tree else worktree(work / "old", args.baseline),
           Path(args.old_cache) if args.old_cache else work / "old-cache")
    new = (Path(args.new_tree) if args.new_tree else worktree(work / "new", head),
           Path(args.new_cache) if args.new_cache else work / "new-cache")
    revision = {side: subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True,
                                     text=True).stdout.strip() or "?" for side, (tree, _) in (("old", old), ("new", new))}
    print(f"old: {old[0]} ({revision['old']}), new: {new[0]} ({revision['new']}); making each whole once")
    for tree, cache in (old, new):
        print(f"  {tree.name}: {run_book(tree, cache, args.data_dir):.1f} s")
    times: dict[str, list[float]] = {}
    for label, extra, repeats in (("cached rerun (--force)", ("--force",), args.repeats),
                                  ("nothing changed", (), 2)):
        for _ in range(repeats):
            for side, (tree, cache) in (("old", old), ("new", new)):
                seconds = run_book(tree, cache, args.data_dir, *extra)
                times.setdefault(f"{label} {side}", []).append(seconds)
                print(f"{label:24s} {side}: {seconds:6.1f} s  load {os.getloadavg()[0]:.2f}")
    for label in ("cached rerun (--force)", "nothing changed"):
        o, n = statistics.mean(times[f"{label} old"]), statistics.mean(times[f"{label} new"])
        print(f"{label}: old {o:.1f} s, new {n:.1f} s, ratio old/new {o / n:.2f}x")


if __name__ == "__main__":
    main()
