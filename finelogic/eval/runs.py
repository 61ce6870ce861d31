"""One notebook family's run, end to end: test sets -> backends -> records, as a profile says.

The accuracy (Table 2) and depth (Table 5 / Figure 3) notebooks both call :func:`accuracy_run`; the
second call is answered from the backends' response caches, so the depth page costs no model calls.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from finelogic.baselines import BASELINE_SETTINGS, run_baseline
from finelogic.config import results_dir
from finelogic.data.problem import Problem
from finelogic.data.suites import EvalSet, evaluation_sets
from finelogic.eval.accuracy import evaluate_accuracy
from finelogic.models.base import GenerationConfig
from finelogic.models.spec import ModelSpec, open_backend, parse_model
from finelogic.profiles import get_profile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AccuracyRun:
    """What an accuracy run did: its records (one per model × setting × item) and how it was made."""

    records: pd.DataFrame
    sets: tuple[EvalSet, ...]
    models: tuple[ModelSpec, ...]
    settings: tuple[str, ...]
    config: GenerationConfig
    model_calls: int

    @property
    def n_items(self) -> int:
        return sum(len(s.problems) for s in self.sets)


def accuracy_run(profile: str, seed: int = 0, *, data_dir: str | Path | None = None,
                 models: Sequence[Any] | None = None, settings: Sequence[str] | None = None) -> AccuracyRun:
    """Evaluate every model × prompt setting on the profile's four test sets.

    Args:
        profile: reads the ``accuracy`` section of the profile (test-set sizes, models, settings,
            decoding, batch size).
        seed: seeds data generation and subsampling (decoding is greedy unless the profile samples).
        data_dir: real benchmark files; default ``$FINELOGIC_DATA_DIR``.
        models: model specs (:func:`finelogic.models.spec.parse_model`) overriding the profile's.
        settings: prompt settings (``Direct``, ``CoT``, ``Few-shot``) or inference-time baselines
            (``Sel-Inf``, ``Logic-LM``, ``SymbCoT``: :mod:`finelogic.baselines`, options from the
            section's optional ``baselines`` mapping, e.g. ``{"Sel-Inf": {"rounds": 4, "items": {"fld": 4}}}``
            where ``items`` runs the baseline on the first n items of each named set only), overriding
            the profile's. ``generation_by_setting`` in the section overrides decoding per setting
            (e.g. ``{"Direct": {"max_new_tokens": 32}}``).

    Writes ``results_dir(profile)/accuracy/records.csv`` with every record (and one file pair per
    model × setting, see :func:`evaluate_accuracy`).
    """
    section = get_profile(profile).section("accuracy")
    sets = tuple(evaluation_sets(section, seed=seed, data_dir=data_dir))
    specs = tuple(parse_model(m) for m in (models or section["models"]))
    setting_names = tuple(settings or section["settings"])
    config = GenerationConfig(seed=seed, **section["generation"])
    problems = [p for s in sets for p in s.problems]
    frames, calls = [], 0
    for spec in specs:
        backend = open_backend(spec, batch_size=section["batch_size"])
        inner = getattr(backend, "backend", backend)
        before = inner.stats.calls
        for setting in setting_names:
            decoding = replace(config, **section.get("generation_by_setting", {}).get(setting, {}))
            if setting in BASELINE_SETTINGS:
                options = dict(section.get("baselines", {}).get(setting, {}))
                items = _first_per_dataset(sets, options.pop("items", None))
                log.info("accuracy: %s, %s, %d items", spec.name, setting, len(items))
                frames.append(run_baseline(setting, items, backend, config=decoding, profile=profile,
                                           run_name=f"{spec.name}-{setting}", model_name=spec.name, **options))
                continue
            log.info("accuracy: %s, %s, %d items", spec.name, setting, len(problems))
            frames.append(evaluate_accuracy(problems, backend, setting, config=decoding, profile=profile,
                                            run_name=f"{spec.name}-{setting}", model_name=spec.name,
                                            batch_size=section["batch_size"] * 4))
        calls += inner.stats.calls - before
    records = pd.concat(frames, ignore_index=True)
    out = results_dir(profile) / "accuracy" / "records.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    records.to_csv(out, index=False)
    return AccuracyRun(records, sets, specs, setting_names, config, calls)


def _first_per_dataset(sets: Sequence[EvalSet], items: Mapping[str, int] | None) -> list[Problem]:
    """The first ``items[name]`` problems of each set (sets not named: none); all when ``items`` is None."""
    if items is None:
        return [p for s in sets for p in s.problems]
    return [p for s in sets for p in s.problems[:items.get(s.name, 0)]]
