"""Forced-choice answers: the label a model prefers after its own response (answer forcing; ours), and their
contextual calibration. The paper reads markers only (Section 3.1); the book shows forced choice as its own column,
never in place of marker accuracy.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Mapping, Sequence

import pandas as pd

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Fact, Problem
from finelogic.eval.accuracy import summarize
from finelogic.models.base import COMPLETION, backend_template, completion_prompt, prompt_text
from finelogic.prompts import MARKERS, build_conversation, labels_for

log = logging.getLogger(__name__)

#: Appended after the model's response; each label's marker is scored as its continuation.
ANSWER_CUE = "\nFinal answer: "

#: Label -> the column holding its marker's summed log-probability (nats; NaN when not offered/scored).
LOGLIKELIHOOD_COLUMNS = {PROVED: "forced_ll_proved", DISPROVED: "forced_ll_disproved", UNKNOWN: "forced_ll_unknown"}

#: The columns :func:`forced_choice` returns, in order.
FORCED_COLUMNS = ("forced_prediction", "forced_correct", *LOGLIKELIHOOD_COLUMNS.values(), "forced_reason")

#: The facts and hypothesis of the content-free inputs of :func:`contextual_calibration` (Zhao et al., 2021).
CONTENT_FREE = ("N/A", "", "[MASK]")

#: The columns :func:`contextual_calibration` returns.
CALIBRATED_COLUMNS = ("calibrated_prediction", "calibrated_correct")

#: ``forced_reason`` of records forced choice does not apply to (the baselines' records).
NOT_A_PROMPT_SETTING = "not a prompt setting (a baseline's answer comes from its own pipeline)"
NO_OUTPUT = "no output (an empty reply is a failed request, not a response to force)"
NO_CHAT_TEMPLATE = "the backend has no chat template to render the conversation (a served model)"
NO_LOGLIKELIHOOD = "the backend cannot score log-likelihoods"


def chance_level(dataset: str) -> float:
    """The accuracy (%) of a uniform guess among the dataset's labels: 33.3 (three labels) or 50 (two)."""
    return 100 / len(labels_for(dataset))


def forced_choice(problems: Sequence[Problem], records: pd.DataFrame, backend: Any, *,
                  few_shot_examples: Sequence[Problem] | None = None) -> pd.DataFrame:
    """The forced-choice answer of each accuracy record: a small model often writes no label marker, so marker
    extraction reads no answer. The context is the conversation in the model's chat template (rebuilt from
    ``setting`` and ``layout``) + its response + :data:`ANSWER_CUE`; the prediction is the label whose marker has
    the highest *summed* log-probability (the markers differ by a token or two; ties go to the first label). A
    record is left unscored, never raising, when its response is empty or the backend has no chat template or
    log-likelihoods; a truncated response is scored: that is what forced choice is for. Returns
    :data:`FORCED_COLUMNS` on the records' index, ``forced_reason`` None where scored.
    """
    by_key = {(p.dataset, p.id): p for p in problems}
    rows: dict[Any, dict[str, Any]] = {}
    requests: list[tuple[str, str]] = []
    asked: list[tuple[Any, str]] = []  # (record index, label) per request
    render = _chat_renderer(backend)
    reason = (NO_LOGLIKELIHOOD if not callable(getattr(backend, "loglikelihood", None))
              else NO_CHAT_TEMPLATE if render is None else None)
    if reason is not None:  # nothing to score (a served model): no row needs reading
        return unscored_columns(records, reason)
    columns = [records[c] for c in ("dataset", "id", "response", "setting", "layout")]
    for index, dataset, id_, response, setting, layout in zip(records.index, *columns):  # faster than iterrows
        if not response:
            rows[index] = _unscored(NO_OUTPUT)
            continue
        problem = by_key[(dataset, id_)]
        layout = layout if isinstance(layout, str) else "principled"
        conversation = build_conversation(problem, setting, few_shot_examples=few_shot_examples, layout=layout)
        context = render(conversation) + str(response) + ANSWER_CUE
        for label in labels_for(problem.dataset):
            requests.append((context, MARKERS[label]))
            asked.append((index, label))
    scores = _loglikelihoods(backend, requests)
    if isinstance(scores, str):
        rows.update({index: _unscored(scores) for index, _ in asked})
        scores = []
    by_record: dict[Any, dict[str, float]] = {}
    for (index, label), (logprob, *_) in zip(asked, scores):
        by_record.setdefault(index, {})[label] = float(logprob)
    for index, lls in by_record.items():
        prediction = max(lls, key=lls.__getitem__)  # max keeps the first of equal values: ties -> first label
        rows[index] = {"forced_prediction": prediction, "forced_correct": prediction == records.at[index, "gold"],
                       **{column: lls.get(label, math.nan) for label, column in LOGLIKELIHOOD_COLUMNS.items()},
                       "forced_reason": None}
    return _frame([rows[i] for i in records.index], records.index)


def contextual_calibration(records: pd.DataFrame, backend: Any, *,
                           few_shot_examples: Sequence[Problem] | None = None) -> pd.DataFrame:
    """The forced-choice answers of ``records`` (with their :data:`FORCED_COLUMNS`) calibrated as Zhao et al.
    (2021, "Calibrate Before Use"): the answer maximises ``log p(marker | context) - log p_cf(label)``, ``p_cf`` the
    label softmax of the same prompt format with the facts and hypothesis each of :data:`CONTENT_FREE`, averaged.
    :data:`CALIBRATED_COLUMNS` on the records' index, None / NA where a record has no forced answer or the backend
    cannot score the content-free contexts."""
    predictions: dict[Any, Any] = {index: None for index in records.index}
    render = _chat_renderer(backend)
    scored = records[records["forced_correct"].notna()] if "forced_correct" in records else records.iloc[:0]
    if scored.empty or render is None:
        return _calibrated(records, predictions)
    layouts = [lay if isinstance(lay, str) else "principled" for lay in scored["layout"]]
    formats = set(zip(scored["dataset"], scored["setting"], layouts))
    requests: list[tuple[str, str]] = []
    asked: list[tuple[tuple[str, str, str], str]] = []
    for key in sorted(formats):
        dataset, setting, layout = key
        labels = labels_for(dataset)
        for text in CONTENT_FREE:
            blank = Problem(id="content-free", dataset=dataset, facts=(Fact("fact1", text),), hypothesis=text,
                            label=labels[0])
            context = render(build_conversation(blank, setting, few_shot_examples=few_shot_examples,
                                                layout=layout)) + ANSWER_CUE
            requests += [(context, MARKERS[label]) for label in labels]
            asked += [(key, label) for label in labels]
    scores = _loglikelihoods(backend, requests)
    if isinstance(scores, str):
        return _calibrated(records, predictions)
    priors = _content_free_priors(asked, [float(s[0]) for s in scores], len(CONTENT_FREE))
    for (index, row), layout in zip(scored.iterrows(), layouts):
        prior = priors[(row["dataset"], row["setting"], layout)]
        # Rounded to 1e-9 nats so that float noise in the prior never breaks a tie: ties -> the first label.
        adjusted = {label: round(float(row[LOGLIKELIHOOD_COLUMNS[label]]) - prior[label], 9) for label in prior}
        predictions[index] = max(adjusted, key=adjusted.__getitem__)
    return _calibrated(records, predictions)


def _content_free_priors(asked: list[tuple[Any, str]], logprobs: list[float], inputs: int) -> dict[Any, dict[str, float]]:
    """Per prompt format, ``log p_cf(label)``: the content-free inputs' label softmaxes, averaged."""
    by_format: dict[Any, list[tuple[str, float]]] = {}
    for (key, label), logprob in zip(asked, logprobs):
        by_format.setdefault(key, []).append((label, logprob))
    priors = {}
    for key, scored in by_format.items():
        width = len(scored) // inputs
        mean: dict[str, float] = {}
        for start in range(0, len(scored), width):
            block = scored[start:start + width]
            top = max(lp for _, lp in block)
            total = sum(math.exp(lp - top) for _, lp in block)
            for label, lp in block:
                mean[label] = mean.get(label, 0.0) + math.exp(lp - top) / total / inputs
        priors[key] = {label: math.log(p) for label, p in mean.items()}
    return priors


def uncalibrated_columns(records: pd.DataFrame) -> pd.DataFrame:
    """:data:`CALIBRATED_COLUMNS` for records with no forced answer to calibrate (a baseline's), all empty."""
    return _calibrated(records, dict.fromkeys(records.index))


def _calibrated(records: pd.DataFrame, predictions: Mapping[Any, Any]) -> pd.DataFrame:
    correct = [pd.NA if predictions[i] is None else predictions[i] == gold
               for i, gold in zip(records.index, records["gold"])]
    return pd.DataFrame({"calibrated_prediction": pd.Series([predictions[i] for i in records.index],
                                                            index=records.index, dtype=object),
                         "calibrated_correct": pd.Series(correct, index=records.index, dtype="boolean")},
                        index=records.index)


def unscored_columns(records: pd.DataFrame, reason: str) -> pd.DataFrame:
    """:data:`FORCED_COLUMNS` for records forced choice does not score, every row saying ``reason``."""
    return _frame([_unscored(reason)] * len(records), records.index)


def summarize_forced(records: pd.DataFrame, by: str | Sequence[str] = ("dataset",), *,
                     column: str = "forced_correct") -> pd.DataFrame:
    """Forced-choice accuracy per group of the scored records (``column`` not NA; ``calibrated_correct`` for
    the calibrated answers): :func:`~finelogic.eval.accuracy.summarize`'s columns plus ``chance`` (%, from the
    group's dataset)."""
    keys = [by] if isinstance(by, str) else list(by)
    if column not in records:
        return pd.DataFrame(columns=[*keys, "n", "correct", "accuracy", "ci_low", "ci_high", "chance"])
    scored = records[records[column].notna()]
    summary = summarize(scored.astype({column: bool}), by, correct_column=column)
    chance = scored.groupby(keys, sort=False, dropna=True)["dataset"].agg(
        lambda d: max(chance_level(x) for x in d))
    summary["chance"] = [chance[tuple(r) if len(keys) > 1 else r[0]] for r in summary[keys].itertuples(index=False)]
    return summary[[*keys, "n", "correct", "accuracy", "ci_low", "ci_high", "chance"]]


def _frame(rows: list[dict[str, Any]], index: pd.Index) -> pd.DataFrame:
    """Rows as :data:`FORCED_COLUMNS`: texts as objects (None stays None), ``forced_correct`` nullable
    boolean, log-likelihoods float."""
    def column(name: str) -> pd.Series:
        values = [row[name] for row in rows]
        dtype = "boolean" if name == "forced_correct" else float if name.startswith("forced_ll") else object
        return pd.Series(values, index=index, dtype=dtype)

    return pd.DataFrame({name: column(name) for name in FORCED_COLUMNS}, index=index)


def _unscored(reason: str) -> dict[str, Any]:
    return {"forced_prediction": None, "forced_correct": pd.NA,
            **{column: math.nan for column in LOGLIKELIHOOD_COLUMNS.values()}, "forced_reason": reason}


def _chat_renderer(backend: Any):
    """conversation -> the prompt text the model continued (its chat template's, or the plain-text completion
    prompt of a model without one), or None where it is not known here (a served chat model's template)."""
    if backend_template(backend) == COMPLETION:
        return completion_prompt
    try:
        tokenizer = getattr(backend, "tokenizer", None)
    except (OSError, ValueError):  # a tokenizer that cannot be read counts as none
        tokenizer = None
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return None
    return lambda conversation: prompt_text(tokenizer, conversation)


def _loglikelihoods(backend: Any, requests: list[tuple[str, str]]) -> list[tuple] | str:
    """The backend's scores, or why it could not give them (a server without echoed log-probs, ...)."""
    if not requests:
        return []
    try:
        return backend.loglikelihood(requests)
    except (NotImplementedError, RuntimeError, OSError) as error:  # RequestFailed, LogprobAlignmentError, ...
        log.warning("forced choice: %s (%s); the forced-choice column stays empty", NO_LOGLIKELIHOOD, error)
        return f"{NO_LOGLIKELIHOOD}: {type(error).__name__}: {str(error)[:200]}"
