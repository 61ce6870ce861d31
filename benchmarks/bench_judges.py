"""Judging speed: symbolic judge (z3, no model) vs the paper's LLM judge on the embedded SmolLM2-135M.

Both judge the same labelled steps (:mod:`finelogic.eval.judge_quality`, from FLD-style gold proofs). The
symbolic judge runs with z3's result cache cleared first; the LLM judge runs in process with no response
cache (``HFBackend``), validity prompts batched, then atomicity prompts of the steps it called valid.

Run: ``.venv/bin/python benchmarks/bench_judges.py [--problems 40] [--llm-steps 8]``
"""
from __future__ import annotations

import argparse
import time

from finelogic.data.generators.fld import generate_fld
import pandas as pd

from finelogic.eval.judge_quality import labelled_steps, score_verdicts
from finelogic.eval.judges import LLMJudge, SymbolicJudge
from finelogic.logic import prover


def timed(judge, items) -> tuple[float, list]:
    start = time.perf_counter()
    verdicts = judge.judge_all([(i.step, i.problem) for i in items])
    return time.perf_counter() - start, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40, help="FLD-style problems (depths 0-9)")
    parser.add_argument("--llm-steps", type=int, default=8, help="steps the LLM judge is timed on")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    problems = generate_fld(args.problems, seed=args.seed, depths=range(0, 10), labels=("PROVED", "DISPROVED"),
                            progress=False)
    items = labelled_steps(problems, seed=args.seed)
    prover._satisfiable.cache_clear()  # z3's result cache
    seconds, symbolic = timed(SymbolicJudge(), items)
    print(f"symbolic judge      {len(items):6d} steps  {len(items) / seconds:10.1f} steps/s  (z3 cache cleared)")

    from finelogic.models import HFBackend

    start = time.perf_counter()
    backend = HFBackend()
    print(f"embedded model load {time.perf_counter() - start:10.1f} s")
    picked = list(range(0, len(items), max(1, len(items) // args.llm_steps)))[: args.llm_steps]
    few = [items[k] for k in picked]
    seconds, llm = timed(LLMJudge(backend), few)
    print(f"LLM judge (135M)    {len(few):6d} steps  {len(few) / seconds:10.2f} steps/s  "
          f"({backend.stats.calls} generate calls)")
    table = pd.concat([score_verdicts("symbolic", few, [symbolic[k] for k in picked]),
                       score_verdicts("LLM (135M)", few, llm)], ignore_index=True)
    print(table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
