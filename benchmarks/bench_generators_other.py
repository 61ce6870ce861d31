"""Throughput of the ProntoQA-style and LogicMark-style generators (problems per second).

Run: ``.venv/bin/python benchmarks/bench_generators_other.py [--n 2000] [--repeat 3]``
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

from finelogic.data.generators.logicmark import Config, generate_logicmark
from finelogic.data.generators.prontoqa import generate_prontoqa


def best_rate(make: Callable[[], list], repeat: int) -> tuple[int, float]:
    """Problems made and the best problems/second over ``repeat`` runs."""
    best, count = 0.0, 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = len(make())
        best = max(best, count / (time.perf_counter() - start))
    return count, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="problems per run")
    parser.add_argument("--repeat", type=int, default=2, help="runs; the best is reported")
    args = parser.parse_args()
    cases = {
        "prontoqa (hops 1-5)": lambda: generate_prontoqa(args.n, seed=0),
        "logicmark (card config)": lambda: generate_logicmark(Config(limit=args.n, seed=42)),
        "logicmark (5-hop only)": lambda: generate_logicmark(Config(limit=args.n // 4, seed=42,
                                                                    target_hop_dist={5: 1.0})),
    }
    for name, make in cases.items():
        count, rate = best_rate(make, args.repeat)
        print(f"{name:26s} {count:6d} problems  {rate:10.0f} problems/s")


if __name__ == "__main__":
    main()
