"""Table 1 of the paper: samples, label types and counts, depth histogram per dataset."""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import pandas as pd

from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Problem

# The paper writes label sets as {T, F, Unknown} (Table 1).
PAPER_LABEL_NAMES = {PROVED: "T", DISPROVED: "F", UNKNOWN: "Unknown"}


def label_types(problems: Sequence[Problem]) -> str:
    """The paper's notation: ``{T, F, Unknown}``; multiple-choice sets read ``4 options``."""
    present = {p.label for p in problems}
    names = [PAPER_LABEL_NAMES[label] for label in LABELS if label in present]
    choices = sorted({len(p.options) for p in problems if p.options is not None})
    names += [f"{c} options" for c in choices]
    return "{" + ", ".join(names) + "}"


def dataset_summary(problems_by_name: Mapping[str, Sequence[Problem]]) -> pd.DataFrame:
    """One row per dataset (Table 1 plus counts); ``depths`` is the histogram as text (``"4: 200, 5: 190"``),
    depths ascending, None (unknown depth) last."""
    rows = []
    for name, problems in problems_by_name.items():
        labels = Counter(p.label for p in problems)
        depths = Counter(p.depth for p in problems)
        known = [d for d in depths if d is not None]
        rows.append({
            "dataset": name,
            "samples": len(problems),
            "label_types": label_types(problems),
            PROVED: labels[PROVED],
            DISPROVED: labels[DISPROVED],
            UNKNOWN: labels[UNKNOWN],
            "multiple_choice": labels[None],
            "min_depth": min(known) if known else None,
            "max_depth": max(known) if known else None,
            "depths": ", ".join(f"{d}: {depths[d]}" for d in sorted(depths, key=lambda d: (d is None, d or 0))),
        })
    return pd.DataFrame(rows, columns=["dataset", "samples", "label_types", PROVED, DISPROVED, UNKNOWN,
                                       "multiple_choice", "min_depth", "max_depth", "depths"])
