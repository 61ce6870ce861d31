"""Overall benchmark accuracy (Section 3.1, Table 2) and FLD accuracy by proof depth (Table 5, Figure 3):
:func:`evaluate_accuracy` gives one record per problem, :func:`summarize` accuracies with Wilson 95% intervals.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.data.problem import UNKNOWN, Problem
from finelogic.eval.extraction import AnswerRule, ReleasedVerdict, extract_answer, score_api, score_depth, score_vllm_overall
from finelogic.eval.stats import wilson_interval
from finelogic.models.base import Backend, GenerationConfig, prompt_token_ids
from finelogic.prompts import PromptLayout, PromptSetting, build_conversation, get_setting, labels_for

log = logging.getLogger(__name__)

#: The paper's FLD depth buckets (Table 5), then the UNKNOWN items as their own bucket.
DEPTH_BUCKETS = ("0-3", "4-7", "8-11", "12-15", "16-19", "UNKNOWN")

#: The extraction policy of ``prediction``/``correct`` (the compat columns hold the other one).
POLICY = AnswerRule.PRINCIPLED

#: One record per problem, in this column order.
RECORD_COLUMNS = (
    "id", "dataset", "depth", "depth_bucket", "gold", "prediction", "correct", "no_answer", "no_output",
    "truncated", "finish_reason", "prediction_compat", "correct_compat", "prediction_api", "correct_api",
    "correct_depth", "compat_scorer", "response", "prompt_tokens", "completion_tokens",
    "prompt_chars", "completion_chars", "seconds", "setting", "model", "policy", "layout",
)

#: Released scorer (:mod:`finelogic.eval.extraction`) -> the record column holding its verdict: the vLLM overall
#: and API scorers of Table 2, the depth scorer of Table 5.
RELEASED_COLUMNS = {"vllm_overall": "correct_compat", "api": "correct_api", "depth": "correct_depth"}

#: The counted-not-scored columns a summary adds up (0 where records lack one, e.g. LogicMark's).
UNSCORED_COLUMNS = ("no_answer", "no_output", "truncated")

SUMMARY_COLUMNS = ("n", "correct", "accuracy", "ci_low", "ci_high", *UNSCORED_COLUMNS)


def depth_bucket(depth: int | None, label: str | None, dataset: str = "fld") -> str | None:
    """The Table 5 bucket of an FLD item: ``0-3``, ``4-7``, ... by proof depth (deeper items continue the
    pattern), ``UNKNOWN`` for UNKNOWN items, None for other datasets and labelled items without a depth."""
    if dataset != "fld":
        return None
    if label == UNKNOWN:
        return "UNKNOWN"
    if depth is None:
        return None
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    low = depth // 4 * 4
    return f"{low}-{low + 3}"


def model_name_of(backend: Any) -> str:
    """A backend's model name: its ``model_name``/``name``, a ``model`` string, the loaded model's
    ``config.name_or_path``, else its class name."""
    for attribute in ("model_name", "name", "model"):
        value = getattr(backend, attribute, None)
        if isinstance(value, str) and value:
            return value
    name = getattr(getattr(getattr(backend, "model", None), "config", None), "name_or_path", None)
    return str(name) if name else type(backend).__name__


def evaluate_accuracy(problems: Sequence[Problem], backend: Backend, setting: PromptSetting | str, *,
                      model: str | None = None, config: GenerationConfig | None = None,
                      few_shot_examples: Sequence[Problem] | None = None, batch_size: int = 64,
                      progress: bool | None = None, layout: PromptLayout | str = PromptLayout.PRINCIPLED,
                      compat_scorer: str = "vllm_overall") -> pd.DataFrame:
    """Solve every labelled problem with ``backend`` under one prompt setting: one :data:`RECORD_COLUMNS` record per
    problem, in order (token counts None without a ``tokenizer``; ``seconds`` the item's share of its chunk's wall
    time). ``config`` defaults to greedy (the released code samples at temperature 0.7, top-p 0.9, up to 3072 new
    tokens; the paper states none); ``compat_scorer``: the released scorer the paper used for this model."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    unlabelled = [p.id for p in problems if p.label is None]
    if unlabelled:
        raise ValueError(f"accuracy needs labelled problems; no label on {unlabelled[:5]}")
    setting = get_setting(setting)
    config = config if config is not None else GenerationConfig()
    model = model or model_name_of(backend)
    tokenizer = getattr(backend, "tokenizer", None)
    conversations = [build_conversation(p, setting, few_shot_examples=few_shot_examples, layout=layout)
                     for p in problems]

    records: list[dict[str, Any]] = []
    chunks = [range(i, min(i + batch_size, len(problems))) for i in range(0, len(problems), batch_size)]
    bar = tqdm(total=len(problems), desc=f"accuracy {setting.name}",
               disable=not progress if progress is not None else len(chunks) < 2)
    for chunk in chunks:
        started = time.perf_counter()
        responses = backend.generate([conversations[i] for i in chunk], config)
        seconds = (time.perf_counter() - started) / len(chunk)
        if len(responses) != len(chunk):
            raise RuntimeError(f"backend returned {len(responses)} completions for {len(chunk)} conversations")
        records += [accuracy_record(problems[i], conversations[i], response, tokenizer, seconds=seconds,
                                    setting=setting.name, model=model, layout=layout, compat_scorer=compat_scorer)
                    for i, response in zip(chunk, responses)]
        bar.update(len(chunk))
    bar.close()

    frame = records_frame(records)
    if records:
        log.info("%s / %s: %d of %d correct (%s)", model, setting.name, int(frame["correct"].sum()),
                 len(frame), POLICY)
    return frame


def records_frame(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Accuracy records as a DataFrame: :data:`RECORD_COLUMNS` in order, the counts as nullable ints."""
    frame = pd.DataFrame(list(records), columns=list(RECORD_COLUMNS))
    return frame.astype({c: "Int64" for c in ("depth", "prompt_tokens", "completion_tokens")})  # ints with gaps


def summarize(records: pd.DataFrame | Iterable[Mapping[str, Any]], by: str | Sequence[str] = ("dataset",),
              *, correct_column: str = "correct") -> pd.DataFrame:
    """Accuracy per group of ``by`` (``("dataset", "depth_bucket")`` for Table 5; a missing value left out), with
    its Wilson 95% interval: the ``by`` columns, then :data:`SUMMARY_COLUMNS` (%; the unscored counts are in ``n``,
    never correct); groups in order of first appearance, depth buckets in :data:`DEPTH_BUCKETS` order.
    """
    frame = records if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    if len(frame):
        for key, group in frame.groupby(keys, sort=False, dropna=True):
            n, correct = len(group), int(group[correct_column].astype(bool).sum())
            low, high = wilson_interval(correct, n)
            rows.append({**dict(zip(keys, key)), "n": n, "correct": correct, "accuracy": 100 * correct / n,
                         "ci_low": 100 * low, "ci_high": 100 * high,
                         **{c: int(group[c].astype(bool).sum()) if c in group else 0 for c in UNSCORED_COLUMNS}})
    summary = pd.DataFrame(rows, columns=keys + list(SUMMARY_COLUMNS))
    order = {k: {v: i for i, v in enumerate(pd.unique(frame[k]))} for k in keys} if len(frame) else {}
    rank = [tuple(_bucket_rank(r[k]) if k == "depth_bucket" else order[k][r[k]] for k in keys)
            for r in rows]
    return summary.iloc[sorted(range(len(rows)), key=rank.__getitem__)].reset_index(drop=True)


def accuracy_record(problem: Problem, conversation: list[dict[str, str]], response: str, tokenizer: Any, *,
                    seconds: float, setting: str, model: str, layout: str | None = None,
                    compat_scorer: str = "vllm_overall") -> dict[str, Any]:
    """One row of :data:`RECORD_COLUMNS`: the response (a str or a ``Completion``) read by the principled policy and
    each released scorer. Not a finished answer is counted, never scored: ``no_output`` (empty: a failed request,
    though the released vLLM scorer reads it as UNKNOWN), ``truncated`` (a marker in a cut-off text is a guess; the
    released scorers score it anyway), ``no_answer`` (finished without a marker); mutually exclusive.
    """
    labels = labels_for(problem.dataset)
    finish_reason = getattr(response, "finish_reason", None)
    no_output = response == ""
    truncated = not no_output and finish_reason == "length"
    prediction = None if no_output or truncated else extract_answer(response, POLICY, labels)
    unscored = ReleasedVerdict(None, False)
    vllm, api, by_depth = (unscored if no_output else score(response, problem.label, problem.dataset)
                           for score in (score_vllm_overall, score_api, score_depth))
    prompt_tokens, completion_tokens = token_counts(tokenizer, conversation, response)
    return {
        "id": problem.id, "dataset": problem.dataset, "depth": problem.depth,
        "depth_bucket": depth_bucket(problem.depth, problem.label, problem.dataset),
        "gold": problem.label, "prediction": prediction, "correct": prediction == problem.label,
        "no_answer": prediction is None and not (no_output or truncated), "no_output": no_output,
        "truncated": truncated, "finish_reason": finish_reason,
        "prediction_compat": vllm.prediction, "correct_compat": vllm.correct,
        "prediction_api": api.prediction, "correct_api": api.correct, "correct_depth": by_depth.correct,
        "compat_scorer": compat_scorer, "response": str(response), "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens, "prompt_chars": sum(len(m["content"]) for m in conversation),
        "completion_chars": len(response), "seconds": round(seconds, 6), "setting": setting, "model": model,
        "policy": POLICY, "layout": layout,
    }


def token_counts(tokenizer: Any, conversation: list[dict[str, str]], response: str) -> tuple[int | None, int | None]:
    """(prompt tokens as the model was given them: :func:`~finelogic.models.base.prompt_token_ids`, completion
    tokens), None where unknown (no tokenizer)."""
    if tokenizer is None:
        return None, None
    return len(prompt_token_ids(tokenizer, conversation)), len(tokenizer(response, add_special_tokens=False)["input_ids"])


def _bucket_rank(bucket: str) -> float:
    return float("inf") if bucket == "UNKNOWN" else float(bucket.split("-")[0])

