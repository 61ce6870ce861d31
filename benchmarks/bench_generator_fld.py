"""Throughput of the FLD-style generator: verified problems per second (run by hand).

    .venv/bin/python benchmarks/bench_generator_fld.py            # 300 problems, depths 0-19, 3 labels
    .venv/bin/python benchmarks/bench_generator_fld.py --n 1100   # the paper's test-set size

Every problem is fully verified by z3 inside the generator (label, each gold step, the distractor check),
which is where almost all the time goes; the per-depth breakdown shows how it grows with depth.
"""
from __future__ import annotations

import argparse
import collections
import platform
import time

from finelogic.data.generators.fld import generate_fld_problem
from finelogic.data.problem import LABELS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="problems to generate (spread over depths x labels)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-depth", type=int, default=19)
    args = parser.parse_args()

    cells = [(d, label) for d in range(args.max_depth + 1) for label in LABELS]
    seconds_by_depth: dict[int, float] = collections.defaultdict(float)
    count_by_depth: collections.Counter = collections.Counter()
    start, cpu_start = time.perf_counter(), time.process_time()
    for k in range(args.n):
        depth, label = cells[k % len(cells)]
        t = time.perf_counter()
        generate_fld_problem(f"{args.seed}/{k}", depth, label)
        seconds_by_depth[depth] += time.perf_counter() - t
        count_by_depth[depth] += 1
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start

    print(f"python {platform.python_version()} on {platform.machine()}, seed {args.seed}")
    print(f"{args.n} problems in {total:.1f} s wall: {args.n / total:.1f} problems/s")
    print(f"CPU time of this process {cpu:.1f} s: {args.n / cpu:.1f} problems/s (independent of other load)")
    for lo in range(0, args.max_depth + 1, 4):
        ds = [d for d in range(lo, min(lo + 4, args.max_depth + 1)) if count_by_depth[d]]
        if ds:
            n = sum(count_by_depth[d] for d in ds)
            s = sum(seconds_by_depth[d] for d in ds)
            print(f"  depth {lo:2d}-{ds[-1]:2d}: {n / s:6.1f} problems/s ({1000 * s / n:.0f} ms each)")


if __name__ == "__main__":
    main()
