"""What an accuracy must beat before it says anything about reasoning: chance, the best constant answer and a
surface-cue rule, scored on the same items as the model (the paper's own caveat in §5.2.1: fine-tuned models
may rely on "shallow pattern matching").

- **chance**: one over the dataset's labels (:func:`finelogic.eval.forced_choice.chance_level`);
- **best constant**: the share of the most frequent gold label among the items (a constant answer chosen
  knowing the items' labels: an upper bound on any constant answer);
- **negation rule**: ``DISPROVED`` when the hypothesis has a negation word (not, no, never, n't, ...), else
  ``PROVED``; it never answers ``UNKNOWN``. A model whose PROVED/DISPROVED answers follow the hypothesis's
  wording rather than the facts scores like it.

:func:`cue_table` gives, per model, setting and dataset, the model's accuracy with its Wilson 95% interval,
its accuracy on the PROVED/DISPROVED items and on the UNKNOWN items apart, the three baselines, and a
reading: whether the interval's lower end clears the best of them.
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping

import pandas as pd

from finelogic.data.problem import Problem
from finelogic.eval.forced_choice import chance_level
from finelogic.eval.stats import wilson_interval

NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot)\b|n't\b", re.IGNORECASE)

COLUMNS = ("model", "setting", "dataset", "n", "accuracy", "ci_low", "ci_high", "n_pd", "accuracy_pd", "n_unknown",
           "accuracy_unknown", "chance", "best_constant", "best_constant_label", "negation_rule", "reading")

BEATS = "above every baseline"
NOT_ABOVE = "not above {name}"


def negation_rule(problem: Problem) -> str:
    """``DISPROVED`` when the hypothesis has a negation word, else ``PROVED``."""
    return "DISPROVED" if NEGATION.search(problem.hypothesis) else "PROVED"


def cue_table(records: pd.DataFrame, problems: Iterable[Problem]) -> pd.DataFrame:
    """One row per model, setting and dataset of ``records`` (accuracy records with ``id``, ``dataset``,
    ``gold``, ``correct``) answering ``problems`` (matched by dataset and id), with :data:`COLUMNS`
    (percentages with one decimal).

    Raises:
        KeyError: a record's ``id`` names no problem in ``problems`` (named).
    """
    by_key = {(p.dataset, p.id): p for p in problems}
    rows = []
    for (model, setting, dataset), group in records.groupby(["model", "setting", "dataset"], sort=False):
        missing = [i for i in group["id"] if (dataset, i) not in by_key]
        if missing:
            raise KeyError(f"record id {missing[0]!r} ({dataset}) names no problem of the run's test sets")
        items = [by_key[dataset, i] for i in group["id"]]
        gold = group["gold"].astype(str)
        n, right = len(group), int(group["correct"].astype(bool).sum())
        low, high = wilson_interval(right, n)
        decided = gold != "UNKNOWN"
        counts = gold.value_counts()
        rule = sum(negation_rule(p) == g for p, g in zip(items, gold))
        row = {"model": model, "setting": setting, "dataset": dataset, "n": n, "accuracy": _pct(right, n),
               "ci_low": round(100 * low, 1), "ci_high": round(100 * high, 1), "n_pd": int(decided.sum()),
               "accuracy_pd": _pct(int(group["correct"][decided.to_numpy()].astype(bool).sum()), int(decided.sum())),
               "n_unknown": int((~decided).sum()),
               "accuracy_unknown": _pct(int(group["correct"][(~decided).to_numpy()].astype(bool).sum()),
                                        int((~decided).sum())),
               "chance": round(chance_level(dataset), 1), "best_constant": _pct(int(counts.iloc[0]), n),
               "best_constant_label": str(counts.index[0]), "negation_rule": _pct(rule, n)}
        row["reading"] = reading(row)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def reading(row: Mapping[str, float]) -> str:
    """Whether the accuracy's 95% interval lies above chance, the best constant answer and the negation rule
    (:data:`BEATS`), or which of them it does not clear (the highest one)."""
    baselines = {"chance": row["chance"], "the best constant answer": row["best_constant"],
                 "the negation rule": row["negation_rule"]}
    name, level = max(baselines.items(), key=lambda item: item[1])
    return BEATS if row["ci_low"] > level else NOT_ABOVE.format(name=name)


def _pct(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else float("nan")
