"""Probing features: several problems per forward pass vs one problem per call vs one pass per row.

All three must give the same features (max abs difference < 1e-4, float32; the read-out is L2-normalised
as in the paper); the point is the time. ``batched``: :func:`finelogic.eval.probing.extract_features` as the
runs call it, one request per (problem, row kind), ``--batch-size`` texts per left-padded pass and their
suffixes in padded passes of their own (``HFBackend.hidden_states_batch``). ``per problem``: the same
requests one ``hidden_states`` call each (the KV-reuse path before cross-problem batching: one pass over
the problem's longest prefix, its suffixes on copies of that KV cache). ``naive``: one full pass per row
over its exact text (skip with ``--no-naive``). The ways run interleaved, ``--rounds`` times, best time kept.

    .venv/bin/python benchmarks/bench_probing_extraction.py --profile tiny --problems 16 --threads 2

Prints rows, tokens fed to the model, seconds, the speed ratios and the load average, and exits non-zero
when the features differ.

Measured 2026-12-01 11:00 UTC on the shared 2-core machine, load average 8-9 (1 min), commit 039670c:
``--profile tiny --problems 4 --threads 1 --no-naive`` (68 rows): batched 54.6 s wall / 15.4 s CPU (10
forward calls), per problem 37.7 s wall / 13.7 s CPU (14 calls); batched is 0.69x in wall time and 0.89x in
CPU time, max |difference| 6.7e-07. An earlier run at load 10.5-11.6 gave 0.67x wall. So the >= 2x target
is NOT met: a problem's text is hundreds of tokens, one pass per problem is already a large pass, and
batching texts of different lengths adds padding (and suffix rows attend over the padded width). Both
ways skip the unembedding (``logits_to_keep=1``), which the KV-reuse path before this change computed
for every position (about a fifth of the forward pass's multiply-adds for SmolLM2-135M); that saving was
not measured separately.

Since commit 9711498 a text and all its suffixes are packed into one sequence under a prefix-tree
attention mask (no KV cache copied per suffix row), so "batched" and "per problem" both take that path.
Against the code of the session start (commit 4120394, a ``git worktree`` of it on ``PYTHONPATH``; one
pass over a problem's longest prefix, its suffixes on copies of that KV cache), the same features of the
tiny profile's first 12 problems (211 rows, chat read-out, 2 threads, ``HFBackend(batch_size=8)`` without
the response cache), interleaved old/new/old/new on an idle machine (load 0.2-1.6), 2026-12-01 11:52 UTC:
old 32.1 s and 32.8 s wall (63.0 / 64.8 s CPU, 45 forward calls, 10,346 tokens), new 23.3 s and 25.3 s
(45.8 / 49.6 s CPU, 2 calls, 8,340 tokens): **1.30-1.38x** in wall and CPU time, max |difference|
8.5e-7. Still short of the issue's 2x.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


class OneProblemPerCall:
    """The backend with only the single-request verb: ``extract_features`` then sends one call per problem."""

    def __init__(self, backend):
        self.hidden_states = backend.hidden_states


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--problems", type=int, default=16, help="problems taken from the profile's set")
    parser.add_argument("--readout", default="chat", choices=("chat", "plain"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-naive", action="store_true", help="skip the one-pass-per-row reference")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from finelogic.eval.probing import extract_features
    from finelogic.eval.probing_data import TASKS, Readout, build_rows, probing_problems
    from finelogic.models.hf import HFBackend
    from finelogic.profiles import get_profile

    torch.set_num_threads(args.threads)
    settings = get_profile(args.profile).section("probing")
    problems = probing_problems(args.problems, args.seed, settings["depths"],
                                distractors=tuple(settings["distractors"]))
    backend = HFBackend(batch_size=args.batch_size)  # uncached: the point is the time
    readout = Readout(args.readout, backend.tokenizer if args.readout == "chat" else None)
    rows = [r for task in TASKS for r in build_rows({"test": problems}, task, readout, args.seed,
                                                     nsd_points=settings["nsd_points"])]
    ways = {"batched": lambda: extract_features(backend, rows, progress=False),
            "per problem": lambda: extract_features(OneProblemPerCall(backend), rows, progress=False)}
    if not args.no_naive:
        ways["naive"] = lambda: extract_features(backend, rows, reuse_prefix=False, progress=False)
    print(f"profile {args.profile}, {len(problems)} problems, {len(rows)} rows "
          f"({', '.join(f'{t}: {sum(r.task == t for r in rows)}' for t in TASKS)}), read-out {args.readout}, "
          f"{args.threads} threads, batch size {args.batch_size}")
    extract_features(backend, rows[:4], progress=False)  # warm-up
    timings: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    features, tokens, calls = {}, {}, {}
    for _ in range(args.rounds):
        for name, extract in ways.items():
            print(f"  {name}: load average {os.getloadavg()[0]:.1f}", flush=True)
            backend.stats.reset()
            start, cpu_start = time.perf_counter(), time.process_time()
            features[name] = extract()
            timings[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu_start)
            tokens[name], calls[name] = backend.stats.prompt_tokens, backend.stats.calls
    diff = max(float(np.abs(features[name] - features["batched"]).max()) for name in ways)
    for name in timings:
        print(f"  {name:11s}: best {min(timings[name]):7.1f} s wall, {min(cpu[name]):7.1f} s CPU of "
              f"{len(timings[name])}, {calls[name]:5d} forward "
              f"calls, {tokens[name]:7d} tokens fed")
    best = {name: min(t) for name, t in timings.items()}
    ratios = ", ".join(f"{best[name] / best['batched']:.2f}x faster than {name} in wall time, "
                       f"{min(cpu[name]) / min(cpu['batched']):.2f}x in CPU time" for name in ways if name != "batched")
    print(f"  batched is {ratios}; max |difference| {diff:.2e}; "
          f"load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0 if diff < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
