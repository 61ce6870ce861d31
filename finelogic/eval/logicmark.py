"""LogicMark: log-likelihood multiple choice by hop depth, as the card (``book/data-formats.md``, "LogicMark")
scores it: every option a continuation of the record's context, scored as lm-evaluation-harness does
(``book/methods.md``, "Log-likelihood multiple choice"). The run is :func:`finelogic.runs.logicmark.run`.
"""
from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from finelogic.data.generators.logicmark import Premises, Statement
from finelogic.eval.stats import one_decimal
from finelogic.data.problem import Problem
from finelogic.eval.accuracy import model_name_of, summarize
from finelogic.paper import LOGICMARK_HOP_SHARE

log = logging.getLogger(__name__)

#: The option's log-likelihood sum over its continuation tokens (``token_mean``, the card's "average over ending
#: tokens"), over its characters (``char``, lm-eval's ``acc_norm``) or as is (``none``, lm-eval's ``acc``).
NORMALIZATIONS = ("token_mean", "char", "none")
#: The card's hop buckets, in its column order.
HOPS = (1, 2, 3, 4, 5)
#: Columns of :func:`accuracy_by` (accuracy and interval in %).
SUMMARY_COLUMNS = ("n", "correct", "accuracy", "ci_low", "ci_high")


# --- Requests and normalisation


def context_of(problem: Problem) -> str:
    """The card's context ``If:\\n<premise>\\n...\\n\\nThen`` (as ``to_record`` and the loader rebuild it)."""
    return "If:\n" + "\n".join(f.text for f in problem.facts) + "\n\n" + problem.hypothesis


def requests_for(problem: Problem) -> list[tuple[str, str]]:
    """One ``(context, continuation)`` request per option, in option order: the context continued with
    ``" " + option``."""
    if not problem.options or problem.answer_index is None:
        raise ValueError(f"Problem {problem.id!r} is not multiple-choice (no options / answer_index)")
    context = context_of(problem)
    return [(context, " " + option) for option in problem.options]


def check_normalization(normalization: str) -> None:
    """Raise ValueError naming the valid choices unless ``normalization`` is one of :data:`NORMALIZATIONS`."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {', '.join(NORMALIZATIONS)}")


def answer_type(option: str) -> str | None:
    """``!=`` or ``=``: the operator of a LogicMark statement such as ``"a != c"`` (None for neither)."""
    return "!=" if "!=" in option else "=" if "=" in option else None


# --- Scoring


def score(problems: Sequence[Problem], backend: Any, normalization: str = "token_mean", *,
          model: str | None = None, requests_of: Callable[[Problem], list[tuple[str, str]]] = requests_for) -> pd.DataFrame:
    """One record per problem, in order: ``id, model, hop, style, answer_type, answer_index``; per option ``k``
    ``option_k``, ``loglik_k`` (nats), ``tokens_k``, ``score_<norm>_k``; per normalisation ``pred_<norm>``,
    ``correct_<norm>``, ``tie_<norm>`` (ties go to the first option, as lm-eval's argmax); then ``normalization``
    (the one that fills them), then :data:`ITEM_METRICS`' columns (``prediction``, ``correct``); every request in
    one ``loglikelihood`` call.
    ``requests_of``: a problem's requests, one per option (other wordings: ``benchmarks/logicmark_gap.py``)."""
    check_normalization(normalization)  # before any model work
    per_problem = [requests_of(p) for p in problems]
    flat = [request for requests in per_problem for request in requests]
    scored = backend.loglikelihood(flat)
    if len(scored) != len(flat):
        raise RuntimeError(f"backend returned {len(scored)} scores for {len(flat)} requests")
    each = iter(scored)
    results = [[next(each) for _ in requests] for requests in per_problem]
    name = model or model_name_of(backend)
    records = [_record(p, r, name, normalization, [x.strip() for _, x in q])
               for p, r, q in zip(problems, results, per_problem)]
    frame = pd.DataFrame(records)
    if records:
        log.info("%s: %d of %d LogicMark items correct (%s)", name, int(frame["correct"].sum()), len(frame),
                 normalization)
    return frame


def _record(problem: Problem, scored: Sequence[tuple[float, int, bool]], model: str,
            normalization: str, scored_texts: Sequence[str]) -> dict[str, Any]:
    options = problem.options or ()
    record: dict[str, Any] = {
        "id": problem.id, "model": model, "hop": problem.depth, "style": problem.meta.get("style"),
        "answer_type": answer_type(options[problem.answer_index]), "answer_index": problem.answer_index,
    }
    scores: dict[str, list[float]] = {norm: [] for norm in NORMALIZATIONS}
    for k, (option, text, (logprob_sum, n_tokens, _)) in enumerate(zip(options, scored_texts, scored)):
        logprob_sum, n_tokens = float(logprob_sum), int(n_tokens)
        record |= {f"option_{k}": option, f"loglik_{k}": logprob_sum, f"tokens_{k}": n_tokens}
        values = {"token_mean": logprob_sum / n_tokens, "char": logprob_sum / len(text), "none": logprob_sum}
        for norm in NORMALIZATIONS:
            record[f"score_{norm}_{k}"] = values[norm]
            scores[norm].append(values[norm])
    for norm in NORMALIZATIONS:
        prediction = int(np.argmax(scores[norm]))  # ties go to the first option, as lm-eval's argmax
        record |= {f"pred_{norm}": prediction, f"correct_{norm}": prediction == problem.answer_index,
                   f"tie_{norm}": scores[norm].count(max(scores[norm])) > 1}
    record["normalization"] = normalization
    return record | {name: metric(problem, record) for name, metric in ITEM_METRICS.items()}


def _prediction(problem: Problem, record: Mapping[str, Any]) -> int:
    """The option picked under the run's normalisation."""
    return record[f"pred_{record['normalization']}"]


def _correct(problem: Problem, record: Mapping[str, Any]) -> bool:
    """Whether that option is the gold one."""
    return record[f"correct_{record['normalization']}"]


#: The last columns of every item record (the family's ``items.csv``), in order: name -> ``f(problem, record)``,
#: ``record`` holding every column before them (``normalization`` is the one the run scores by). A metric of
#: the LogicMark family is a function here and its entry in this table (README, "Where to add things").
ITEM_METRICS: dict[str, Callable[[Problem, Mapping[str, Any]], Any]] = {"prediction": _prediction,
                                                                      "correct": _correct}


# --- Results


def accuracy_by(records: pd.DataFrame, by: str | Sequence[str] = "hop",
                normalization: str = "token_mean") -> pd.DataFrame:
    """Accuracy (%) with Wilson 95% intervals per group of ``by`` (``hop``, ``style``, ``answer_type``,
    ``model``...) under ``normalization``: the ``by`` columns, then :data:`SUMMARY_COLUMNS`, sorted; groups
    with a missing value (``style`` of loaded items) left out."""
    check_normalization(normalization)
    keys = [by] if isinstance(by, str) else list(by)
    # Log-likelihood scoring always picks an option: no item is ever unanswered.
    frame = records.assign(no_answer=False).sort_values(keys, kind="stable")
    summary = summarize(frame, keys, correct_column=f"correct_{normalization}")
    return summary[keys + list(SUMMARY_COLUMNS)]


def card_average(by_hop: pd.DataFrame) -> tuple[float, float, float]:
    """The card's ``avg``: per-hop accuracies of ``by_hop`` (:func:`accuracy_by`) weighted by its hop shares
    (Qwen2.5-3B: 0.10·48.80 + 0.40·54.90 + 0.25·46.00 + 0.15·42.40 + 0.10·39.40 = 48.64). Returns ``(avg, low,
    high)`` in %, the stratified normal interval clipped to [0, 100]; NaNs when a bucket is empty."""
    shares, z = LOGICMARK_HOP_SHARE, 1.959963984540054
    rows = {f"{int(r.hop)}-hop": r for r in by_hop.itertuples()}
    if any(name not in rows or rows[name].n == 0 for name in shares):
        return math.nan, math.nan, math.nan
    avg = sum(w * rows[name].accuracy for name, w in shares.items())
    variance = sum(w * w * (p := rows[name].accuracy / 100) * (1 - p) / rows[name].n for name, w in shares.items())
    half = 100 * z * math.sqrt(variance)
    return avg, max(0.0, avg - half), min(100.0, avg + half)


def card_layout(records: pd.DataFrame, normalization: str = "token_mean", *, setting: str = "") -> pd.DataFrame:
    """Records in the card's layout, long like :func:`finelogic.paper.reported` (``model, setting, metric, value,
    ci_low, ci_high, n``), metrics ``1-hop`` ... ``5-hop`` (NaN, n 0 when empty), ``avg`` and ``item_mean``, in %."""
    rows = []
    for model, group in records.groupby("model", sort=False):
        by_hop = accuracy_by(group[group["hop"].isin(HOPS)], "hop", normalization)
        present = {int(r.hop): r for r in by_hop.itertuples()}
        for hop in HOPS:
            r = present.get(hop)
            rows.append((model, setting, f"{hop}-hop", *((r.accuracy, r.ci_low, r.ci_high, r.n) if r else
                                                         (math.nan, math.nan, math.nan, 0))))
        avg, low, high = card_average(by_hop)
        rows.append((model, setting, "avg", avg, low, high, int(by_hop["n"].sum())))
        overall = accuracy_by(group.assign(all="all"), "all", normalization).iloc[0]
        rows.append((model, setting, "item_mean", overall.accuracy, overall.ci_low, overall.ci_high,
                     int(overall.n)))
    return pd.DataFrame(rows, columns=["model", "setting", "metric", "value", "ci_low", "ci_high", "n"])


def summaries(records: pd.DataFrame, normalization: str = "token_mean") -> dict[str, pd.DataFrame]:
    """The notebook's tables, long with a ``model`` column, in %: ``by_hop`` (:func:`card_layout`), ``by_style``,
    ``by_answer_type`` and ``by_normalization``."""
    rows = [accuracy_by(records.assign(normalization_=norm), ["model", "normalization_"], norm)
            for norm in NORMALIZATIONS]
    by_norm = pd.concat(rows).rename(columns={"normalization_": "normalization"})
    order = {model: i for i, model in enumerate(pd.unique(records["model"]))}  # models in run order
    return {
        "by_hop": card_layout(records, normalization),
        "by_style": accuracy_by(records, ["model", "style"], normalization),
        "by_answer_type": accuracy_by(records, ["model", "answer_type"], normalization),
        "by_normalization": by_norm.sort_values("model", kind="stable", key=lambda m: m.map(order))
                                   .reset_index(drop=True),
    }


def with_ci(table: pd.DataFrame, columns: str = "metric", value: str = "value") -> pd.DataFrame:
    """A long table (``model``, ``columns``, ``value``, ``ci_low``, ``ci_high``) as a wide table of ``"48.6
    [44.0, 53.1]"`` strings, one row per model, columns in order of first appearance."""
    cells = [f"{one_decimal(v)} [{one_decimal(lo)}, {one_decimal(hi)}]" if not math.isnan(v) else "n/a"
             for v, lo, hi in zip(table[value], table["ci_low"], table["ci_high"])]
    wide = table.assign(cell=cells).pivot_table(index="model", columns=columns, values="cell", aggfunc="first",
                                                sort=False)
    wide = wide.reindex(columns=list(dict.fromkeys(table[columns])))
    wide.columns.name = None
    return wide


# --- Explaining one problem


def derivation(problem: Problem) -> list[str]:
    """The premises, as written, that derive the correct option in the fewest hops, in chaining order (``x !=
    y``: a shortest equality path to ``u``, ``u != v``, a shortest path from ``v``); its length is the hop
    depth. Raises ValueError when the option does not follow."""
    written = {Statement.parse(f.text): f.text for f in problem.facts}
    premises = Premises(written)
    goal = Statement.parse(problem.options[problem.answer_index])  # type: ignore[index]
    if goal.op == "=":
        path = _equality_path(premises, goal.left, goal.right)
        if path is None:
            raise ValueError(f"{goal} does not follow from the premises of {problem.id!r}")
        return [written[s] for s in path]
    best: list[Statement] | None = None
    for u, v in premises.inequalities:
        for a, b in ((u, v), (v, u)):
            left, right = _equality_path(premises, goal.left, a), _equality_path(premises, b, goal.right)
            if left is not None and right is not None:
                chain = [*left, Statement(a, "!=", b), *right]
                best = chain if best is None or len(chain) < len(best) else best
    if best is None:
        raise ValueError(f"{goal} does not follow from the premises of {problem.id!r}")
    return [written[s] for s in best]


def _equality_path(premises: Premises, x: str, y: str) -> list[Statement] | None:
    """The equality premises along a shortest x -> y path (breadth first); [] when x == y."""
    if x == y:
        return []
    if x not in premises.neighbours:
        return None
    previous: dict[str, str] = {x: x}
    queue = deque([x])
    while queue:
        v = queue.popleft()
        for w in sorted(premises.neighbours[v]):
            if w not in previous:
                previous[w] = v
                queue.append(w)
    if y not in previous:
        return None
    path = []
    while y != x:
        path.append(Statement(previous[y], "=", y))
        y = previous[y]
    return path[::-1]
