"""How long the answer each supervision style is trained to write is on the study's FLD test items, in the
embedded model's tokens, against the study's generation cap (issue 29; not a speed benchmark).

For every FLD test item of the ``study`` profile's accuracy family (240 items at depths 0-7; UNKNOWN items
have no depth) and every style, the gold answer :func:`finelogic.sft.styles.build` writes (the text a model
trained in that style learns to produce) is tokenized with the embedded model's tokenizer. A response cut at
the cap before its answer marker is scored wrong, so where most gold answers are longer than the cap, a
style's accuracy measures the cap rather than the style. FOLIO, Multi-LogiEval and the real ProntoQA file
carry no formulas, so no gold answer in a style exists for them; their cut responses are counted in the
accuracy records instead.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/study_target_lengths.py [--out results/study/target_lengths]

Writes ``lengths.csv`` (style, depth, n, median, p90, max, over_cap) and ``provenance.json`` (commit, date,
cap, seconds). Seconds on 2 cores: generating the stored test set if absent, then ~10 s of tokenizing.
"""
from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from finelogic.data.stored import generate_stored
from finelogic.models.embedded import converted_path
from finelogic.runs import accuracy
from finelogic.runs.provenance import git_commit
from finelogic.sft.styles import STYLES, build

OUT = Path(__file__).resolve().parent.parent / "results" / "study" / "target_lengths"


def _row(style: str, depth: str, values: list[int], cap: int) -> dict:
    values_ = np.array(values)
    return {"style": style, "depth": depth, "n": len(values_), "median": int(np.median(values_)),
            "p90": int(np.percentile(values_, 90)), "max": int(values_.max()), "over_cap": int((values_ > cap).sum())}


def lengths(problems, count, cap: int) -> pd.DataFrame:
    """One row per style and depth ("UNKNOWN" for the items without one), then one over all of them: the gold
    answers' token counts and how many are longer than ``cap``."""
    rows = []
    for style in STYLES:
        by_depth: dict[str, list[int]] = {}
        for problem in problems:
            depth = "UNKNOWN" if problem.depth is None else str(problem.depth)
            by_depth.setdefault(depth, []).append(count(build(style, problem)))
        for depth, values in sorted(by_depth.items(), key=lambda kv: (kv[0] == "UNKNOWN", kv[0])):
            rows.append(_row(style, depth, values, cap))
        rows.append(_row(style, "all", [v for values in by_depth.values() for v in values], cap))
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    start = time.perf_counter()
    settings = accuracy.PROFILES["study"]
    problems = generate_stored(settings.fld.name, seed=0, **settings.fld.kwargs())
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(converted_path())
    cap = settings.generation.max_new_tokens
    table = lengths(problems, lambda text: len(tok(text, add_special_tokens=False)["input_ids"]), cap)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "lengths.csv", index=False)
    provenance = {"commit": git_commit(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "cap": cap, "items": len(problems),
                  "test_set": f"{settings.fld.name} {settings.fld.kwargs()}, seed 0",
                  "seconds": round(time.perf_counter() - start, 1)}
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")
    print(table[table["depth"] == "all"].to_string(index=False))
    print(json.dumps(provenance))


if __name__ == "__main__":
    main()
