"""The supervision-styles notebook's run (Figure 4 and the SFT rows of Tables 2, 3 and 5), end to end.

For each style: build the profile's training set (:func:`finelogic.sft.datasets.training_set`), fine-tune
the base model on it (:func:`finelogic.sft.train.train`; a checkpoint with the same data and settings is
reused), then evaluate the fine-tuned model on the profile's SFT test items under the CoT prompt it was
trained with. The base model answers the same items under the same prompt, so every ``SFT-<style>`` row
stands beside its base row, as in the paper's tables (``model`` = the base model, ``setting`` =
``SFT-<style>``).

Profile section ``sft``:

- data sizes (``fld_n``, ``fld_unknown``, ``fld_depths``, ``prontoqa_n``, ``prontoqa_hops``; see
  :mod:`finelogic.sft.datasets`);
- ``styles``: which styles to train (default all four);
- ``logipt``: also train a ``LogiPT`` row on solver traces of the same problems
  (:func:`finelogic.baselines.logipt_data`; its prompt is the Direct one, so it is evaluated under Direct);
- ``base_model``: a model spec (default ``"embedded"``);
- ``train``: :class:`finelogic.sft.train.TrainConfig` fields (``"paper": True`` starts from the paper's
  recipe, :data:`finelogic.sft.train.PAPER_CONFIG`);
- ``eval``: the test items, with the keys of the accuracy section (``fld``, ``prontoqa_generated``,
  ``limit``), plus ``generation`` (decoding; the styles' texts are long, so ``max_new_tokens`` must leave
  room for the answer marker) and ``batch_size``.

Files under ``results_dir(profile)/sft/``: ``records.csv`` (accuracy records of base and SFT rows),
``training.csv`` (one row per style), ``losses.csv`` (loss per step and style).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from finelogic.config import results_dir
from finelogic.data.suites import EvalSet, evaluation_sets
from finelogic.eval.accuracy import evaluate_accuracy
from finelogic.models.base import GenerationConfig
from finelogic.models.spec import ModelSpec, open_backend, parse_model
from finelogic.profiles import get_profile
from finelogic.prompts import DIRECT
from finelogic.data.problem import Problem
from finelogic.sft.datasets import SETTING, training_problems, training_set
from finelogic.sft.styles import STYLES, StyleError, check
from finelogic.sft.train import PAPER_CONFIG, TrainConfig, TrainedModel, train, with_overrides

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SupervisionRun:
    """What the supervision run made: checkpoints, their training summaries, and accuracy records."""

    trained: tuple[TrainedModel, ...]
    examples: dict[str, list[dict[str, Any]]]
    checks: pd.DataFrame
    records: pd.DataFrame
    training: pd.DataFrame
    losses: pd.DataFrame
    sets: tuple[EvalSet, ...]
    base: ModelSpec
    config: GenerationConfig


def train_config(profile: str) -> TrainConfig:
    """The profile's training settings (``sft.train``) over the defaults or the paper's recipe."""
    overrides = dict(get_profile(profile).section("sft").get("train", {}))
    start = PAPER_CONFIG if overrides.pop("paper", False) else TrainConfig()
    return with_overrides(start, overrides)


def supervision_run(profile: str, seed: int = 0, *, styles: Sequence[str] | None = None,
                    base_model: Any = None, data_dir: str | Path | None = None,
                    evaluate: bool = True) -> SupervisionRun:
    """Train one model per supervision style and evaluate each beside the base model (module docstring).

    Args:
        profile: reads the ``sft`` section.
        seed: seeds the training data, the training run and the test items.
        styles: a subset of :data:`finelogic.sft.styles.STYLES` (default: the profile's, else all four).
        base_model: the model to fine-tune (default: the profile's ``base_model``, else the embedded one).
        data_dir: real benchmark files for the test items; default ``$FINELOGIC_DATA_DIR``.
        evaluate: False trains only (``records`` is then empty).
    """
    section = get_profile(profile).section("sft")
    styles = tuple(styles or section.get("styles", STYLES))
    unknown = [s for s in styles if s not in STYLES]
    if unknown:
        raise ValueError(f"unknown supervision styles {unknown}; choose from {', '.join(STYLES)}")
    base = parse_model(base_model or section.get("base_model", "embedded"))
    config = with_overrides(train_config(profile), {"seed": seed})
    problems = training_problems(profile, seed)  # generated once, written in every style
    problems_by_id = {p.id: p for p in problems}
    # Each text is judged once, here; a failing line stops the run before any training.
    examples = {style: training_set(style, profile, seed, verify=False, problems=problems) for style in styles}
    checks = style_checks(examples, problems_by_id)
    failing = checks[checks["failing"] > 0]
    if not failing.empty:
        raise StyleError(f"built training texts fail their check: {failing.to_dict('records')}")
    trained = [train(examples[style], name=f"SFT-{style}", base_model=base, config=config) for style in styles]
    rows = list(styles)
    if section.get("logipt", False):
        from finelogic.baselines import logipt_data

        order = [problems_by_id[e["id"]] for e in examples[styles[0]]] if styles else problems
        examples["LogiPT"] = logipt_data(order, skip_unusable=True)
        trained.append(train(examples["LogiPT"], name="LogiPT", base_model=base, config=config))
        rows.append("LogiPT")
    training = pd.DataFrame([_training_row(t, style) for t, style in zip(trained, rows)])
    losses = pd.DataFrame([{"setting": t.name, "step": i + 1, "loss": loss}
                           for t in trained for i, loss in enumerate(t.losses)])

    evaluation = dict(section.get("eval", {}))
    sets = tuple(evaluation_sets(evaluation, seed=seed, data_dir=data_dir)) if evaluate else ()
    generation = GenerationConfig(seed=seed, **evaluation.get("generation", {}))
    test_items = [p for s in sets for p in s.problems]
    frames = []
    if test_items:
        batch = evaluation.get("batch_size", 16)
        runs = [(base, SETTING.name), *((t.spec, t.name) for t in trained)]
        if any(t.name == "LogiPT" for t in trained):
            runs.insert(1, (base, DIRECT.name))  # LogiPT's own prompt, for the base model too
        loaded: tuple[ModelSpec, Any] | None = None  # the base model's two runs are adjacent: load it once
        for spec, setting in runs:
            prompt = DIRECT if setting in (DIRECT.name, "LogiPT") else SETTING
            if loaded is None or loaded[0] != spec:
                loaded = (spec, open_backend(spec, batch_size=batch))
            records = evaluate_accuracy(test_items, loaded[1], prompt,
                                        config=generation, profile=profile, run_name=f"sft-{base.name}-{setting}",
                                        model_name=base.name, batch_size=batch * 4)
            frames.append(records.assign(setting=setting))
    records = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    out = results_dir(profile) / "sft"
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in (("records", records), ("training", training), ("losses", losses)):
        frame.to_csv(out / f"{name}.csv", index=False)
    return SupervisionRun(tuple(trained), examples, checks, records, training, losses, sets, base, generation)


def style_checks(examples: dict[str, list[dict[str, Any]]], problems: dict[str, Problem]) -> pd.DataFrame:
    """Per style: examples, lines judged by :func:`finelogic.sft.styles.check`, lines not valid and atomic."""
    rows = []
    for style, items in examples.items():
        if style not in STYLES:  # LogiPT's solver traces are not a supervision style
            continue
        verdicts = [v for e in items for v in check(style, problems[e["id"]], e["messages"][-1]["content"])]
        rows.append({"style": style, "examples": len(items), "lines": len(verdicts),
                     "failing": sum(not (v.valid and v.atomic) for v in verdicts)})
    return pd.DataFrame(rows, columns=["style", "examples", "lines", "failing"])


def _training_row(trained: TrainedModel, style: str) -> dict[str, Any]:
    first, last = trained.loss_drop(window=max(1, min(3, len(trained.losses) // 3)))
    return {"setting": trained.name, "style": style, "examples": trained.examples, "steps": len(trained.losses),
            "tokens": trained.tokens, "target_tokens": trained.target_tokens, "seconds": round(trained.seconds, 1),
            "tokens_per_s": round(trained.tokens_per_second, 1), "loss_first": round(first, 3),
            "loss_last": round(last, 3), "method": trained.config["method"], "checkpoint": trained.path.name}
