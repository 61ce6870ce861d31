"""Stepwise soundness (paper §3.2, Table 3): all-valid, all-relevant, all-atomic, per sample and per step.

Responses -> :func:`judge_responses` (one row per step, judged, relevance under both rules) -> :func:`soundness_table`.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, MutableMapping, Sequence

import pandas as pd
from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.data.problem import Problem
from finelogic.eval.judges import Judge, Verdict, problem_key
from finelogic.eval.relevance import RelevanceRule, relevance
from finelogic.eval.stats import wilson_interval
from finelogic.eval.steps import parse_steps, released_steps, step_from_json, step_json_problem, step_to_json
from finelogic.memo import memo_key
from finelogic.typed_config import Choice

#: Columns of a step row (plus the key columns carried over from the records).
STEP_COLUMNS = ("sample", "step", "n_steps", "raw", "premises", "conclusion_id", "parsed", "valid", "atomic",
                "reason", "decided_by", "relevant", "relevant_compat")
METRICS = ("all_valid", "all_relevant", "all_atomic")


class SoundnessPolicy(Choice):
    """How steps are read, counted and judged: ours, or the released ``src/eval_step.py``'s (``book/released-code.md``,
    "Soundness details of the released code": steps read by :func:`~finelogic.eval.steps.released_steps`,
    ``assumpN`` conclusions neither judged nor counted, the released relevance in both columns, an undecided
    judgement counted False), so the same :func:`soundness_table` gives the released numbers."""

    PRINCIPLED = "principled"
    RELEASED = "released"


def steps_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a response's kept steps, a list of :func:`step_to_json` lists (None: nothing):
    the check of the memo :func:`judge_responses` keeps them in."""
    if type(value) is not list:
        return f"a response's steps must be a list, not {str(value)[:60]}"
    return next((f"step {n}: {why}" for n, step in enumerate(value) if (why := step_json_problem(step))), None)


def judge_responses(records: pd.DataFrame, problems: Mapping[str, Problem], judge: Judge, *,
                    policy: SoundnessPolicy | str = SoundnessPolicy.PRINCIPLED,
                    keys: Sequence[str] = ("id", "model", "setting", "depth_bucket"),
                    progress: bool | None = None, memo: MutableMapping[str, Any] | None = None) -> pd.DataFrame:
    """Split every response (``records``: ``id``, ``response``) into steps and judge them all in one batched call:
    one row per step, the ``keys`` present then :data:`STEP_COLUMNS` (``sample``: the record's position; a response
    with no steps gets one row, ``step`` -1, so it counts as excluded). ``memo`` keeps each response's steps as read
    under ``policy`` (the verdicts are the judge's to keep)."""
    policy = SoundnessPolicy.of(policy, "soundness policy")
    read = parse_steps if policy is SoundnessPolicy.PRINCIPLED else released_steps
    keys = [k for k in keys if k in records.columns]
    parsed = []
    problem_keys: dict[str, str] = {}
    for position, record in enumerate(records.to_dict("records")):
        problem = problems[record["id"]]
        response = str(record.get("response") or "")
        if memo is None:
            steps = read(response, problem)
        else:
            if record["id"] not in problem_keys:
                # what the readers read of a problem: the judge's part and the released code's input text
                problem_keys[record["id"]] = memo_key([problem_key(problem), problem.meta.get("input")])
            key = memo_key(["steps", policy, problem_keys[record["id"]], response])
            kept = memo.get(key)
            if kept is None:
                steps = read(response, problem)
                memo[key] = [step_to_json(s) for s in steps]
            else:
                steps = [step_from_json(v) for v in kept]
        parsed.append((position, record, problem, steps))
    released = policy is SoundnessPolicy.RELEASED
    by_released_rule = [relevance(steps, RelevanceRule.RELEASED) for *_, steps in parsed]
    principled = by_released_rule if released else [relevance(steps, RelevanceRule.PRINCIPLED) for *_, steps in parsed]
    pairs = [(step, problem) for (_, _, problem, steps), rel in zip(parsed, by_released_rule)
             for step, r in zip(steps, rel) if not released or r is not None]
    verdicts = _verdicts(judge, pairs, progress)
    rows = []
    for (position, record, _, steps), rel, rel_released in zip(parsed, principled, by_released_rule):
        base = {k: record[k] for k in keys} | {"sample": position, "n_steps": len(steps)}
        if not steps:
            rows.append(base | {"step": -1, "parsed": False, "reason": "no steps"})
        for step, relevant, relevant_compat in zip(steps, rel, rel_released):
            row = base | {"step": step.index, "raw": step.raw, "premises": " & ".join(step.premises),
                          "conclusion_id": step.conclusion_id, "parsed": step.parsed, "relevant": relevant,
                          "relevant_compat": relevant_compat}
            if released and relevant is None:
                rows.append(row | {"reason": "concludes an assumption: not judged, not counted (released code)"})
                continue
            verdict = next(verdicts)
            if released:  # the released code counts an undecided judgement False
                valid = bool(verdict.valid)
                reason = verdict.reason if verdict.decided else f"{verdict.reason}; counted False (released code)"
                verdict = Verdict(valid, valid and bool(verdict.atomic), reason, verdict.decided_by)
            rows.append(row | {"valid": verdict.valid, "atomic": verdict.atomic, "reason": verdict.reason,
                               "decided_by": verdict.decided_by})
    return pd.DataFrame(rows, columns=[*keys, *STEP_COLUMNS])


def _verdicts(judge: Judge, pairs: list, progress: bool | None, chunk: int = 256) -> Iterable:
    """The judge's verdicts on ``pairs``, one batched call (in chunks under a tqdm bar from 200 steps)."""
    if not (progress if progress is not None else len(pairs) >= 200):
        return iter(judge.judge_all(pairs))
    starts = tqdm(range(0, len(pairs), chunk), desc="judging steps")
    return (verdict for start in starts for verdict in judge.judge_all(pairs[start:start + chunk]))


def _relevance_column(policy: SoundnessPolicy | str) -> str:
    principled = SoundnessPolicy.of(policy, "soundness policy") is SoundnessPolicy.PRINCIPLED
    return "relevant" if principled else "relevant_compat"


def sample_soundness(steps: pd.DataFrame, policy: SoundnessPolicy | str = SoundnessPolicy.PRINCIPLED) -> pd.DataFrame:
    """One row per sample: ``status``, the three metrics (None unless scored), ``n_counted`` and ``n_undecided``.
    A step is counted unless the relevance rule skips it; a sample is ``no_steps`` with none counted and
    ``undecided`` when the judge could not decide a counted step (excluded, never guessed)."""
    column = _relevance_column(policy)
    columns = ["sample", "status", "n_counted", "n_undecided", *METRICS]
    samples = pd.Index(steps["sample"].dropna().unique()).sort_values()
    counted = steps[(steps["step"] >= 0) & steps[column].notna()]
    by = counted["sample"]

    def per_sample(values: pd.Series, how: str, fill: Any) -> list:  # one grouped pass, not a filter per sample
        return values.groupby(by).agg(how).reindex(samples, fill_value=fill).tolist()

    n_counted = per_sample(counted["sample"], "size", 0)
    n_undecided = per_sample(counted["valid"].isna(), "sum", 0)
    valid = per_sample(counted["valid"].astype(bool), "all", True)
    relevant = per_sample(counted[column].astype(bool), "all", True)
    atomic = per_sample(counted["atomic"] == True, "all", True)  # noqa: E712
    rows = []
    for i, sample in enumerate(samples):
        status = "no_steps" if not n_counted[i] else "undecided" if n_undecided[i] else "scored"
        scored = status == "scored"
        rows.append({"sample": sample, "status": status, "n_counted": int(n_counted[i]),
                     "n_undecided": int(n_undecided[i]), "all_valid": bool(valid[i]) if scored else None,
                     "all_relevant": bool(relevant[i]) if scored else None,
                     "all_atomic": bool(atomic[i]) if scored else None})
    return pd.DataFrame(rows, columns=columns)


def _proportion(successes: int, n: int) -> tuple[float, float, float]:
    low, high = wilson_interval(successes, n)
    return (successes / n if n else float("nan")), low, high


def soundness_table(steps: pd.DataFrame, policy: SoundnessPolicy | str = SoundnessPolicy.PRINCIPLED,
                    by: Sequence[str] = ("model", "setting")) -> pd.DataFrame:
    """Table 3 from step rows (:func:`judge_responses`), one row per group of ``by``: ``samples``, ``scored``,
    ``no_steps``, ``undecided``; the metrics as fractions of scored samples with Wilson 95% ``_low``/``_high``;
    ``steps`` (counted), ``undecided_steps``, ``valid_rate``, ``atomic_rate`` (of decided steps), ``relevant_rate``
    (of counted steps in FLD notation). Atomic is asked only of valid steps, so all-atomic ⊆ all-valid.
    """
    column = _relevance_column(policy)
    if steps.empty:
        return pd.DataFrame(columns=[*by, "samples", "scored", "no_steps", "undecided",
                                     *(f"{m}{s}" for m in METRICS for s in ("", "_low", "_high")),
                                     "steps", "undecided_steps", "valid_rate", "atomic_rate", "relevant_rate"])
    by = [c for c in by if c in steps.columns]
    samples = sample_soundness(steps, policy)
    keyed = steps.drop_duplicates("sample").set_index("sample")[by] if by else None
    if keyed is not None:
        samples = samples.join(keyed, on="sample")
    rows = []
    groups = samples.groupby(by, sort=False, dropna=False) if by else [((), samples)]
    for key, group in groups:
        scored = group[group["status"] == "scored"]
        row = dict(zip(by, key)) | {
            "samples": len(group), "scored": len(scored),
            "no_steps": int((group["status"] == "no_steps").sum()),
            "undecided": int((group["status"] == "undecided").sum()),
        }
        for metric in METRICS:
            value, low, high = _proportion(int(scored[metric].astype(bool).sum()), len(scored))
            row |= {metric: value, f"{metric}_low": low, f"{metric}_high": high}
        in_group = steps[steps["sample"].isin(group["sample"])]
        counted = in_group[(in_group["step"] >= 0) & in_group[column].notna()]
        decided = counted[counted["valid"].notna()]
        readable = counted[counted["parsed"] == True]  # noqa: E712  (free text has no id to cite)
        row |= {
            "steps": len(counted), "undecided_steps": len(counted) - len(decided),
            "valid_rate": _proportion(int(decided["valid"].astype(bool).sum()), len(decided))[0],
            "atomic_rate": _proportion(int((decided["atomic"] == True).sum()), len(decided))[0],  # noqa: E712
            "relevant_rate": _proportion(int(readable[column].astype(bool).sum()), len(readable))[0],
        }
        rows.append(row)
    return pd.DataFrame(rows)


def table3_percent(table: pd.DataFrame, *, by_released_rule: pd.DataFrame | None = None,
                   index: Sequence[str] = ("model", "setting")) -> pd.DataFrame:
    """Table 3's layout from :func:`soundness_table` rows: the metrics in % (one decimal), their intervals as
    text and ``scored / samples``; ``by_released_rule`` (the same table under ``released``) adds its
    all-relevant column."""
    out = table[list(index)].copy()
    for metric in METRICS:
        out[metric] = (100 * table[metric]).round(1)
    for metric in METRICS:
        out[f"{metric} 95% CI"] = [
            "–" if pd.isna(low) else f"[{100 * low:.1f}, {100 * high:.1f}]"
            for low, high in zip(table[f"{metric}_low"], table[f"{metric}_high"])]
    if by_released_rule is not None:
        out["all_relevant (released)"] = (100 * by_released_rule["all_relevant"]).round(1).to_numpy()
    out["scored / samples"] = [f"{s} / {n}" for s, n in zip(table["scored"], table["samples"])]
    return out.set_index(list(index))
