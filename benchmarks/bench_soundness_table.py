"""Table 3 from step rows: this checkout's ``sample_soundness`` / ``soundness_table`` against those of an
earlier commit (default ``db5d9a0``, which filtered the step rows once per sample), on the committed study's
step rows. Checks that both give the same frames cell for cell and prints the times and their ratio.

Run: .venv/bin/python benchmarks/bench_soundness_table.py [--before db5d9a0] [--repeat 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def module_at(commit: str, path: str, name: str):
    """The module ``path`` as it was at ``commit`` (read with ``git show``), imported under ``name``."""
    source = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=REPO, check=True, capture_output=True,
                            text=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="finelogic-bench-"))
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best_of(repeat: int, call) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return min(times), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="db5d9a0")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("FINELOGIC_RESULTS", str(REPO / "results"))
    from finelogic.eval import soundness as now
    from finelogic.runs.soundness import SoundnessRun

    before = module_at(args.before, "finelogic/eval/soundness.py", "soundness_before")
    run = SoundnessRun.read(REPO / "results" / "study" / "soundness")
    print(f"load average {os.getloadavg()[0]:.2f}; step rows: steps {len(run.steps)}, gold_steps "
          f"{len(run.gold_steps)}; best of {args.repeat}")
    for rows_name in ("steps", "gold_steps"):
        rows = getattr(run, rows_name)
        for policy in ("principled", "released"):
            for function in ("sample_soundness", "soundness_table"):
                old_s, old = best_of(args.repeat, lambda: getattr(before, function)(rows, policy))
                new_s, new = best_of(args.repeat, lambda: getattr(now, function)(rows, policy))
                pd.testing.assert_frame_equal(old, new)  # same table, cell for cell
                print(f"{rows_name:10s} {policy:17s} {function:16s} before {old_s:7.3f} s  now {new_s:7.3f} s  "
                      f"ratio {old_s / new_s:6.1f}x  equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
