"""Compare two results folders CSV by CSV, timing columns aside: the check that a change kept the results.

    python benchmarks/compare_results.py OLD/results/tiny NEW/results/tiny

Prints each CSV that is missing, new, or differs (its columns, row count, or the columns whose cells differ),
then the counts; exits 1 when any differs.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

#: Columns that measure the run rather than the results.
TIMING = re.compile(r"second|time|wall|tokens_per_s|peak|rss|elapsed|_mb$")


def compare(old: Path, new: Path) -> tuple[int, list[str]]:
    """The number of equal CSVs and a line for each one that is not."""
    same, problems, skipped = 0, [], set()
    for path in sorted(old.rglob("*.csv")):
        name = path.relative_to(old)
        if not (new / name).exists():
            problems.append(f"missing in {new}: {name}")
            continue
        a, b = pd.read_csv(path), pd.read_csv(new / name)
        if list(a.columns) != list(b.columns):
            problems.append(f"columns differ: {name}: {sorted(set(a.columns) ^ set(b.columns))}")
            continue
        kept = [c for c in a.columns if not TIMING.search(c.lower())]
        skipped |= set(a.columns) - set(kept)
        if len(a) != len(b):
            problems.append(f"rows differ: {name}: {len(a)} vs {len(b)}")
        elif not a[kept].equals(b[kept]):
            problems.append(f"cells differ: {name}: {[c for c in kept if not a[c].equals(b[c])]}")
        else:
            same += 1
    problems += [f"new in {new}: {p.relative_to(new)}" for p in sorted(new.rglob("*.csv"))
                 if not (old / p.relative_to(new)).exists()]
    print(f"timing columns left out: {sorted(skipped)}")
    return same, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    same, problems = compare(args.old, args.new)
    for line in problems:
        print(line)
    print(f"{same} CSVs equal, {len(problems)} not")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
