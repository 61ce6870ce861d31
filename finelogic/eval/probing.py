"""Representation-level probing (paper §3.3, Appendix B; Table 4): features, linear probes, metrics.

Rows (:mod:`finelogic.eval.probing_data`) → :func:`extract_features` → :func:`probe_predictions` (the linear probe
and its baselines per task) → :func:`summarize` (CSS, RFI, NSD and row accuracy with 95% CIs over test problems).
"""
from __future__ import annotations

import hashlib
import warnings
from typing import Any, Callable, MutableMapping, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.eval.stats import wilson_interval
from finelogic.eval.probing_data import TASKS, ProbeRow
from finelogic.memo import memo_key
from finelogic.models.base import StatesRequest, hidden_states_of

PREDICTION_COLUMNS = ("task", "problem_id", "step", "n_steps", "label", "prediction", "correct")
#: Probe names in the predictions, in the order :func:`probe_predictions` writes them.
LINEAR, MAJORITY, TEXT_ONLY = "linear probe", "majority class", "text only (candidate line)"
#: Bootstrap resamples of test problems behind every CI.
RESAMPLES = 1000
#: Hidden-states requests (one per problem and row kind) handed to the backend per call (the progress bar's step).
EXTRACTION_CHUNK = 32


# ------------------------------------------------------------------------------------------- features


def extract_features(backend: Any, rows: Sequence[ProbeRow], *, layer: int = -1,
                     progress: bool | None = None) -> np.ndarray:
    """The hidden state at the last token of every row's text, L2-normalised as the paper's vLLM embedding read-out,
    shape ``(len(rows), hidden_size)``, float32. ``layer`` 0: embeddings, -1: the last layer (after the final norm,
    the paper's). One request per problem and row kind, the suffixes run on the shared prefix's KV cache."""
    features: list[np.ndarray | None] = [None] * len(rows)
    groups: dict[tuple[str, bool], list[int]] = {}
    for index, row in enumerate(rows):  # rows without a suffix are read at their prefix's end
        groups.setdefault((row.problem_id, row.suffix == ""), []).append(index)
    requests, layouts = [], []
    for (_, bare), members in groups.items():
        prefixes = sorted({rows[i].prefix for i in members}, key=len)
        text = prefixes[-1]
        if not all(text.startswith(p) for p in prefixes):
            raise ValueError(f"rows of {rows[members[0]].problem_id!r} do not share one prefix")
        options: dict[str, Any] = {"layer": layer, "normalize": True}
        suffixes = None if bare else [sorted({rows[i].suffix for i in members if rows[i].prefix == p})
                                      for p in prefixes]
        if suffixes is not None:
            options["suffixes"] = suffixes
        requests.append(StatesRequest(text, [len(p) for p in prefixes], options))
        layouts.append((members, prefixes, suffixes))
    chunks = [range(i, min(i + EXTRACTION_CHUNK, len(requests))) for i in range(0, len(requests), EXTRACTION_CHUNK)]
    for chunk in tqdm(chunks, desc="features", unit="chunk", disable=_quiet(progress, len(requests))):
        for k, states in zip(chunk, hidden_states_of(backend, [requests[k] for k in chunk])):
            members, prefixes, suffixes = layouts[k]
            if suffixes is None:
                at = {(p, ""): states[b] for b, p in enumerate(prefixes)}
            else:
                at = {(p, s): states[b][c] for b, p in enumerate(prefixes) for c, s in enumerate(suffixes[b])}
            for i in members:
                features[i] = at[rows[i].prefix, rows[i].suffix]
    return np.stack(features)  # type: ignore[arg-type]


def _quiet(progress: bool | None, n: int) -> bool:
    return progress is False or (progress is None and n < 8)


# ------------------------------------------------------------------------------------------- probe


def fit_probe(features: np.ndarray, labels: Sequence[int], groups: Sequence[str], *, seed: int = 0) -> Any:
    """The paper's probe, fit on training rows: a standardised logistic regression whose regularisation is chosen
    by cross-validation over problems (``groups``), so rows of one problem never sit on both sides of a fold.
    Five folds, fewer when the rarer class has fewer training problems."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    labels = np.asarray(labels)
    groups = np.asarray(groups)
    if len(set(labels.tolist())) < 2:
        raise ValueError("the training rows hold one class only; a probe needs both")
    per_class = min(len(set(groups[labels == c])) for c in set(labels.tolist()))
    k = max(2, min(5, per_class, len(set(groups))))
    splits = list(StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed).split(features, labels, groups))
    probe = make_pipeline(StandardScaler(),
                          LogisticRegressionCV(cv=splits, max_iter=1000, scoring="accuracy", random_state=seed))
    with warnings.catch_warnings():  # sklearn 1.9 announces API changes that do not change this model
        warnings.filterwarnings("ignore", category=FutureWarning, module="sklearn")
        return probe.fit(features, labels)


def predict_table(rows: Sequence[ProbeRow], predictions: Sequence[int]) -> pd.DataFrame:
    """Tidy predictions: ``task, problem_id, step, n_steps, label, prediction, correct`` per row."""
    table = pd.DataFrame({"task": [r.task for r in rows], "problem_id": [r.problem_id for r in rows],
                          "step": [r.step for r in rows], "n_steps": [r.n_steps for r in rows],
                          "label": [r.label for r in rows], "prediction": np.asarray(predictions, dtype=int)})
    table["correct"] = table["label"] == table["prediction"]
    return table


def majority_table(train: Sequence[ProbeRow], test: Sequence[ProbeRow]) -> pd.DataFrame:
    """The majority-class baseline: every test row gets the training rows' commoner label (ties: 1)."""
    majority = int(2 * sum(r.label for r in train) >= len(train))
    return predict_table(test, [majority] * len(test))


# ------------------------------------------------------------------------------------------- metrics


def correctness_span(correct: Sequence[bool]) -> int:
    """``n - i*`` for one problem's predictions at steps ``1..n`` (Appendix B.3): ``i*`` the earliest step from
    which every prediction is correct (Section 3.3's reading, as the released code computes it); 0 when the last
    prediction is wrong, ``n - 1`` when all are right."""
    n = len(correct)
    if n == 0:
        raise ValueError("a problem needs at least one prediction")
    if not correct[-1]:
        return 0
    first = n
    while first > 1 and correct[first - 2]:
        first -= 1
    return n - first


def correctness_spans(table: pd.DataFrame) -> pd.Series:
    """Span per problem (index ``problem_id``) from ``problem_id, step, n_steps, correct`` rows, one per step."""
    spans = {}
    for problem_id, rows in table.groupby("problem_id", sort=False):
        rows = rows.sort_values("step")
        n = int(rows["n_steps"].iloc[0])
        if rows["step"].tolist() != list(range(1, n + 1)):
            raise ValueError(f"problem {problem_id!r}: steps {rows['step'].tolist()} are not 1..{n}")
        spans[problem_id] = correctness_span(rows["correct"].astype(bool).tolist())
    return pd.Series(spans, name="span", dtype=int)


def correctness_spanning_steps(table: pd.DataFrame) -> float:
    """CSS (Table 4, in steps): the mean of :func:`correctness_spans` over the problems in ``table``."""
    return float(correctness_spans(table).mean())


def all_rows_correct(table: pd.DataFrame) -> float:
    """Percentage of problems in ``table`` (``problem_id, correct``) whose rows are all correct: RFI's 6 rows (3
    necessary, 3 redundant facts), NSD's 3 derivable + 3 not yet at each point (Table 4)."""
    per_problem = table.groupby("problem_id", sort=False)["correct"].all()
    return float(100 * per_problem.mean())


#: RFI and NSD (Table 4, %): one metric over each task's rows.
redundant_fact_identification = next_step_derivability = all_rows_correct


def row_accuracy(table: pd.DataFrame) -> float:
    """Percentage of rows classified correctly."""
    return float(100 * table["correct"].mean())


TASK_METRIC = {"css": correctness_spanning_steps, "rfi": redundant_fact_identification,
               "nsd": next_step_derivability}
METRIC_UNIT = {"css": "steps", "rfi": "% of problems", "nsd": "% of problems"}


def accuracy_by_steps_remaining(table: pd.DataFrame) -> pd.DataFrame:
    """CSS rows' accuracy (%) by steps remaining ``n_steps - step`` (0 = the full proof), with ``n`` rows."""
    remaining = table["n_steps"] - table["step"]
    grouped = table.assign(steps_remaining=remaining).groupby("steps_remaining")["correct"]
    return pd.DataFrame({"accuracy": 100 * grouped.mean(), "n": grouped.size()}).reset_index()


def per_problem_values(table: pd.DataFrame, task: str) -> pd.DataFrame:
    """Per test problem (index ``problem_id``): ``value`` (CSS span, or 100 if all rows right else 0), ``correct``
    and ``rows``."""
    grouped = table.groupby("problem_id", sort=False)["correct"]
    out = pd.DataFrame({"correct": grouped.sum().astype(int), "rows": grouped.size()})
    if task == "css":
        out["value"] = correctness_spans(table).reindex(out.index).astype(float)
    else:
        out["value"] = 100.0 * grouped.all().astype(float)
    return out


def bootstrap_ci(values: pd.DataFrame, *, seed: int = 0, resamples: int = RESAMPLES,
                 level: float = 0.95) -> dict[str, float]:
    """Percentile bootstrap CIs over the problems of :func:`per_problem_values` (a problem's rows stay together):
    ``ci_low``, ``ci_high`` (the metric) and ``row_ci_low``, ``row_ci_high`` (row accuracy, %)."""
    n = len(values)
    index = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    metric = values["value"].to_numpy()[index].mean(axis=1)
    rows = 100 * values["correct"].to_numpy()[index].sum(axis=1) / values["rows"].to_numpy()[index].sum(axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(metric, [tail, 100 - tail])
    row_low, row_high = np.percentile(rows, [tail, 100 - tail])
    return {"ci_low": float(low), "ci_high": float(high), "row_ci_low": float(row_low), "row_ci_high": float(row_high)}


def summarize(predictions: pd.DataFrame, *, seed: int = 0, resamples: int = RESAMPLES) -> pd.DataFrame:
    """Per ``model, readout, probe, task``: the metric with its 95% CI over test problems (RFI, NSD: Wilson, which
    stays wide at 0/n and n/n; CSS: bootstrap), row accuracy with its bootstrap CI, and counts."""
    keys = [c for c in ("model", "readout", "probe") if c in predictions.columns]
    records = []
    for key, group in predictions.groupby([*keys, "task"], sort=False):
        task = key[-1]
        values = per_problem_values(group, task)
        ci = bootstrap_ci(values, seed=seed, resamples=resamples)
        if task != "css":
            low, high = wilson_interval(int((values["value"] > 0).sum()), len(values))
            ci.update(ci_low=100 * low, ci_high=100 * high)
        records.append({**dict(zip([*keys, "task"], key)), "metric": TASK_METRIC[task](group),
                        "ci_low": ci["ci_low"], "ci_high": ci["ci_high"], "unit": METRIC_UNIT[task],
                        "row_accuracy": row_accuracy(group), "row_ci_low": ci["row_ci_low"],
                        "row_ci_high": ci["row_ci_high"], "problems": group["problem_id"].nunique(),
                        "rows": len(group)})
    return pd.DataFrame(records)


# ------------------------------------------------------------------------------------------- probes per task


def text_only_predictions(train: Sequence[ProbeRow], test: Sequence[ProbeRow], *, seed: int = 0,
                          memo: MutableMapping[str, Any] | None = None) -> pd.DataFrame:
    """The text-only baseline: :func:`fit_probe` on bag-of-tokens counts of each row's own line (words and single
    symbols, so ids, negations and connectives count). It never sees the context, so it sits at chance unless the
    line's surface form separates the classes. ``memo``: as :func:`probe_predictions`'."""
    from sklearn.feature_extraction.text import CountVectorizer

    def fitted() -> list[int]:
        vectorizer = CountVectorizer(token_pattern=r"\w+|[^\w\s]", lowercase=True)
        x_train = vectorizer.fit_transform([r.candidate for r in train]).toarray().astype(np.float32)
        x_test = vectorizer.transform([r.candidate for r in test]).toarray().astype(np.float32)
        probe = fit_probe(x_train, [r.label for r in train], [r.problem_id for r in train], seed=seed)
        return probe.predict(x_test).tolist()

    inputs = {"kind": "text-only probe", "train": [r.candidate for r in train], "test": [r.candidate for r in test]}
    return predict_table(test, _kept(memo, inputs, train, seed, fitted))


def probe_predictions(rows: Sequence[ProbeRow], features: np.ndarray, *, seed: int = 0,
                      text_only: pd.DataFrame | None = None, memo: MutableMapping[str, Any] | None = None) -> pd.DataFrame:
    """Every task's linear probe, majority and text-only baselines, scored on the test rows: ``probe`` +
    :data:`PREDICTION_COLUMNS`. ``features[i]``: row ``i``'s vector. ``text_only``: an earlier result's
    :data:`TEXT_ONLY` rows for the same rows (that baseline reads no states, so a run fits it once). ``memo``: each
    probe's test predictions keyed by digests of its exact inputs, the seed and library versions.
    """
    tables = []
    for task in TASKS:
        train_index = [i for i, r in enumerate(rows) if r.task == task and r.split == "train"]
        test_index = [i for i, r in enumerate(rows) if r.task == task and r.split == "test"]
        train, test = [rows[i] for i in train_index], [rows[i] for i in test_index]

        def fitted() -> list[int]:
            probe = fit_probe(features[train_index], [r.label for r in train], [r.problem_id for r in train], seed=seed)
            return probe.predict(features[test_index]).tolist()

        inputs = {"kind": "linear probe", "train": _digest(features[train_index]), "test": _digest(features[test_index])}
        linear = _kept(memo, inputs, train, seed, fitted)
        if text_only is None:
            text = text_only_predictions(train, test, seed=seed, memo=memo)
        else:
            text = _reused(text_only[(text_only["probe"] == TEXT_ONLY) & (text_only["task"] == task)], test)
        for name, table in ((LINEAR, predict_table(test, linear)), (MAJORITY, majority_table(train, test)),
                            (TEXT_ONLY, text)):
            tables.append(table.assign(probe=name))
    return pd.concat(tables, ignore_index=True)[["probe", *PREDICTION_COLUMNS]]


def predictions_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a probe's kept test predictions, a list of class ids (None: nothing): the
    check of the ``probing-probes`` memo."""
    if type(value) is not list or any(type(v) is not int for v in value):
        return f"a probe's predictions must be a list of whole numbers, not {str(value)[:60]}"
    return None


def _kept(memo: MutableMapping[str, Any] | None, inputs: dict[str, Any], train: Sequence[ProbeRow], seed: int,
          fitted: Callable[[], list[int]]) -> list[int]:
    """A probe's test predictions: from ``memo`` when its inputs were fitted before, else ``fitted()`` (kept)."""
    if memo is None:
        return fitted()
    import sklearn

    key = memo_key({**inputs, "labels": [r.label for r in train], "groups": [r.problem_id for r in train],
                    "seed": seed, "sklearn": sklearn.__version__, "numpy": np.__version__})
    predictions = memo.get(key)
    if predictions is None:
        predictions = memo[key] = fitted()
    return predictions


def _digest(array: np.ndarray) -> str:
    """sha256 of an array's dtype, shape and bytes."""
    array = np.ascontiguousarray(array)
    return hashlib.sha256(f"{array.dtype}{array.shape}".encode() + array.tobytes()).hexdigest()


def _reused(table: pd.DataFrame, test: Sequence[ProbeRow]) -> pd.DataFrame:
    """``table``'s predictions as a prediction table of ``test``, which must be the rows it was made of."""
    fresh = predict_table(test, table["prediction"].to_numpy())
    keys = ["task", "problem_id", "step", "n_steps", "label"]
    if len(table) != len(test) or not fresh[keys].equals(table[keys].reset_index(drop=True)):
        raise ValueError("text_only holds predictions of other rows")
    return fresh


#: Table 4's label for the baselines that are the same for every model (they never see its states).
SHARED_ROWS = {MAJORITY: "(labels only)", TEXT_ONLY: "(candidate text only)"}


def table4(predictions: pd.DataFrame, readout: str = "chat") -> pd.DataFrame:
    """Our Table 4: CSS (steps), RFI and NSD (%) per model's linear probe, then the model-independent baselines
    once (:func:`shared_once`). Index ``(model, probe)``, in order of appearance."""
    chosen = shared_once(predictions[predictions["readout"] == readout])
    summary = summarize(chosen, resamples=1)
    table = summary.pivot_table(index=["model", "probe"], columns="task", values="metric", sort=False)
    return table[["css", "rfi", "nsd"]].rename(columns=str.upper).rename_axis(columns=None).round(1)


def shared_once(predictions: pd.DataFrame) -> pd.DataFrame:
    """Every model's linear probe, then each model-independent baseline (:data:`SHARED_ROWS`) once, from
    the first model, its ``model`` renamed to the row label."""
    parts = [predictions[predictions["probe"] == LINEAR]]
    for probe, label in SHARED_ROWS.items():
        chosen = predictions[predictions["probe"] == probe]
        if len(chosen):
            parts.append(chosen[chosen["model"] == chosen["model"].iloc[0]].assign(model=label))
    return pd.concat(parts)
