"""What an accuracy must beat before it says anything about reasoning: chance, the best constant answer and two
surface-cue rules, scored on the same items as the model (the paper's own caveat in §5.2.1: fine-tuned models may
rely on "shallow pattern matching"). :func:`cue_table` sets them beside each model's accuracy.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Mapping, Sequence

import pandas as pd

from finelogic.data.problem import DISPROVED, PROVED, Problem
from finelogic.eval.forced_choice import chance_level
from finelogic.eval.stats import wilson_interval
from finelogic.logic import FormulaSyntaxError, negate, parse_formula, states

NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot)\b|n't\b", re.IGNORECASE)

COLUMNS = ("model", "setting", "dataset", "n", "accuracy", "ci_low", "ci_high", "n_pd", "accuracy_pd", "n_unknown",
           "accuracy_unknown", "chance", "best_constant", "best_constant_label", "negation_rule", "consequent_rule", "reading")

BEATS = "above every baseline"


def negation_rule(problem: Problem) -> str:
    """``DISPROVED`` when the hypothesis has a negation word, else ``PROVED`` (never ``UNKNOWN``): a model whose
    answers follow the hypothesis's wording rather than the facts scores like it."""
    return DISPROVED if NEGATION.search(problem.hypothesis) else PROVED


def consequent_rule(problem: Problem) -> str | None:
    """``PROVED`` when some fact states the hypothesis (is it, or an implication, maybe universal, with it as
    consequent) and none its negation, ``DISPROVED`` the other way round, else :func:`negation_rule`'s answer.
    It reads a generator's label off ``A -> hypothesis`` facts without following any chain. None when a fact or
    the hypothesis has no formula."""
    formulas = problem.formulas
    try:
        hypothesis = parse_formula(formulas["hypothesis"])
        facts = [parse_formula(formulas[f.id]) for f in problem.facts]
    except (KeyError, FormulaSyntaxError):
        return None
    proves = any(states(f, hypothesis) for f in facts)
    disproves = any(states(f, negate(hypothesis)) for f in facts)
    if proves != disproves:
        return PROVED if proves else DISPROVED
    return negation_rule(problem)


def baselines(items: Sequence[Problem], gold: Sequence[str]) -> dict[str, float]:
    """The cue baselines on ``items`` with their ``gold`` labels, in % (one decimal): ``best constant`` (the most
    frequent gold label's share: an upper bound on any constant answer), ``negation rule`` and ``consequent rule``
    (left out when an item has no formulas). Items of several datasets may be pooled."""
    n = len(gold)
    if not n:
        return {}
    counts = pd.Series(list(gold), dtype=str).value_counts()
    out = {"best constant": _pct(int(counts.iloc[0]), n),
           "negation rule": _pct(sum(negation_rule(p) == g for p, g in zip(items, gold)), n)}
    consequent = [consequent_rule(p) for p in items]
    if None not in consequent:
        out["consequent rule"] = _pct(sum(c == g for c, g in zip(consequent, gold)), n)
    return out


def matched(records: pd.DataFrame, problems: Iterable[Problem]) -> list[Problem]:
    """The problem of each record (``dataset``, ``id``), in the records' order; KeyError naming a missing one."""
    by_key = {(p.dataset, p.id): p for p in problems}
    missing = [(d, i) for d, i in zip(records["dataset"], records["id"]) if (d, i) not in by_key]
    if missing:
        raise KeyError(f"record id {missing[0][1]!r} ({missing[0][0]}) names no problem of the run's test sets")
    return [by_key[d, i] for d, i in zip(records["dataset"], records["id"])]


def cue_table(records: pd.DataFrame, problems: Iterable[Problem]) -> pd.DataFrame:
    """One row per model, setting and dataset of accuracy ``records`` answering ``problems``: :data:`COLUMNS`
    (% with one decimal), the accuracy apart on PROVED/DISPROVED and UNKNOWN items, and the ``reading``: whether
    the interval's lower end clears chance and every cue baseline (:func:`clears`)."""
    problems = list(problems)
    rows = []
    for (model, setting, dataset), group in records.groupby(["model", "setting", "dataset"], sort=False):
        items = matched(group, problems)
        gold = group["gold"].astype(str)
        correct = group["correct"].astype(bool).to_numpy()
        n, right = len(group), int(correct.sum())
        low, high = wilson_interval(right, n)
        decided = (gold != "UNKNOWN").to_numpy()
        levels = baselines(items, list(gold))
        row = {"model": model, "setting": setting, "dataset": dataset, "n": n, "accuracy": _pct(right, n),
               "ci_low": round(100 * low, 1), "ci_high": round(100 * high, 1), "n_pd": int(decided.sum()),
               "accuracy_pd": _pct(int(correct[decided].sum()), int(decided.sum())),
               "n_unknown": int((~decided).sum()), "accuracy_unknown": _pct(int(correct[~decided].sum()),
                                                                           int((~decided).sum())),
               "chance": round(chance_level(dataset), 1), "best_constant": levels["best constant"],
               "best_constant_label": str(gold.value_counts().index[0]), "negation_rule": levels["negation rule"],
               "consequent_rule": levels.get("consequent rule", math.nan)}
        row["reading"] = clears(row["ci_low"], {
            "chance": row["chance"], "the best constant answer": row["best_constant"],
            "the negation rule": row["negation_rule"], "the consequent rule": row["consequent_rule"]})
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def clears(ci_low: float, levels: Mapping[str, float | None]) -> str:
    """:data:`BEATS` when ``ci_low`` lies above every level with a value, else which it does not clear (the
    highest)."""
    known = {k: v for k, v in levels.items() if v is not None and not math.isnan(v)}
    name, level = max(known.items(), key=lambda item: item[1])
    return BEATS if ci_low > level else f"not above {name}"


def _pct(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else float("nan")
