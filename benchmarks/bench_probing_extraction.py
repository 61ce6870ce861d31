"""Probing features: KV-cache reuse vs one forward pass per row, on a profile's probing set.

Both ways must give the same features (max abs difference < 1e-4, float32); the point is the time.
With reuse, each problem costs one pass over its longest prefix (the whole proof for CSS) plus the short
appended suffixes of RFI and NSD on copies of the prefix's KV cache; naively every row re-encodes its
whole text.

    .venv/bin/python benchmarks/bench_probing_extraction.py --profile tiny --problems 4 --threads 2

Prints rows, tokens fed to the model, seconds and the speed ratio, and exits non-zero when the
features differ.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--problems", type=int, default=4, help="problems taken from the profile's set")
    parser.add_argument("--readout", default="chat", choices=("chat", "plain"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from finelogic.eval.probing import extract_features
    from finelogic.eval.probing_data import TASKS, Readout, build_rows, probing_problems
    from finelogic.models.spec import open_model
    from finelogic.profiles import get_profile

    torch.set_num_threads(args.threads)
    settings = get_profile(args.profile).section("probing")
    problems = probing_problems(args.problems, args.seed, settings["depths"],
                                distractors=tuple(settings["distractors"]))
    backend = open_model("embedded", batch_size=8, cache=False)  # uncached: the point is the time
    readout = Readout(args.readout, backend.tokenizer if args.readout == "chat" else None)
    rows = [r for task in TASKS for r in build_rows({"test": problems}, task, readout, args.seed,
                                                     nsd_points=settings["nsd_points"])]
    timings, features, tokens = {}, {}, {}
    for name, reuse in (("kv reuse", True), ("naive", False)):
        before = backend.stats.prompt_tokens
        start = time.perf_counter()
        features[name] = extract_features(backend, rows, reuse_prefix=reuse, progress=False)
        timings[name] = time.perf_counter() - start
        tokens[name] = backend.stats.prompt_tokens - before
    diff = float(np.abs(features["kv reuse"] - features["naive"]).max())
    print(f"profile {args.profile}, {len(problems)} problems, {len(rows)} rows "
          f"({', '.join(f'{t}: {sum(r.task == t for r in rows)}' for t in TASKS)}), read-out {args.readout}, "
          f"{args.threads} threads")
    for name in timings:
        print(f"  {name:8s}: {timings[name]:7.1f} s, {tokens[name]:6d} tokens fed")
    print(f"  speed-up {timings['naive'] / timings['kv reuse']:.1f}x, tokens {tokens['naive'] / tokens['kv reuse']:.1f}x "
          f"fewer; max |difference| {diff:.2e}")
    return 0 if diff < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
