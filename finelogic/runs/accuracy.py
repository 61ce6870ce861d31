"""Overall benchmark accuracy (paper Sections 3.1 and 5.2.1, Table 2): every model x setting on the four
test sets, prompt settings through :func:`finelogic.eval.accuracy.evaluate_accuracy`, baselines through
:mod:`finelogic.baselines`. The depth (Table 5) and soundness (Table 3) pages read the same records.

Every record holds the verdict of each released scorer (:mod:`finelogic.eval.extraction`); ``compat_scorer``
names the one the paper used for the model (a dict model entry may say ``"scorer": "api"``). Every
prompt-setting record also gets our forced choice and its contextual calibration
(:mod:`finelogic.eval.forced_choice`), or ``forced_reason`` saying why not.
"""
from __future__ import annotations

import inspect
import json
import logging
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from finelogic.baselines import LOGIC_LM, SEL_INF, SYMBCOT, logic_lm, selection_inference, symbcot
from finelogic.baselines.logic_lm import translation_problem
from finelogic.data.problem import Problem
from finelogic.data.suites import EvalSet, FLDSet, ProntoQASet, TestSets, evaluation_sets
from finelogic.eval.accuracy import evaluate_accuracy, summarize
from finelogic.eval.forced_choice import (NOT_A_PROMPT_SETTING, contextual_calibration, forced_choice, summarize_forced,
                                          uncalibrated_columns, unscored_columns)
from finelogic.memo import Memo, source_version
from finelogic.models.base import GenerationConfig
from finelogic.runs.supervision import SupervisionRun
from finelogic.prompts import MARKERS, SETTINGS, PromptLayout
from finelogic.models.base import backend_template
from finelogic.runs.backends import open_models, release
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Provenance, Recording, call_counts
from finelogic.runs.results import EVAL_SETS, Run, kept

log = logging.getLogger(__name__)

#: Printed setting name -> baseline function (the other settings are prompt settings).
BASELINES: Mapping[str, Callable[..., Any]] = {SEL_INF: selection_inference, LOGIC_LM: logic_lm, SYMBCOT: symbcot}

#: The baselines whose pure work on model replies (parsing translations, the solver) is kept in the memo
#: ``baseline-translations`` (``$FINELOGIC_CACHE/memo``), so a cached rerun does not redo it.
MEMOISED = (LOGIC_LM, SYMBCOT)
#: The arguments the run passes a baseline's function; its other keyword arguments are its settings.
PASSED = {"problems", "backend", "config", "model", "memo"}

FAMILY = "accuracy"

#: ``forced_reason`` of every record when the config turns forced choice off.
FORCED_OFF = "forced choice turned off (the config's forced_choice is False)"

#: The released scorers a model entry's ``scorer`` key may name (the depth scorer is Table 5's, for all).
MODEL_SCORERS = ("vllm_overall", "api")

#: Table 2's cells: one per model × setting × dataset.
TABLE2_KEYS = ("model", "setting", "dataset")
SET_COLUMNS = ("dataset", "paper_name", "n", "source", "generated", "present")
TRACE_COLUMNS = ("id", "dataset", "setting", "model", "trace")


@dataclass(frozen=True)
class AccuracyConfig(TestSets):
    """The accuracy family's config: its test sets, ``settings`` (prompt settings and baselines, in table
    order), decoding (``seed`` is the run's; ``generation_by_setting`` changes it for one setting), a
    baseline's options (its function's keyword arguments, and ``items``: the first n items of each named set
    only, e.g. ``{"Sel-Inf": {"items": {"fld": 1}}}``). ``fine_tuned_generation`` changes the decoding of the
    fine-tuned models handed to the run (the ``SFT-<style>`` / ``LogiPT`` rows of Table 2)."""

    models: tuple[Any, ...] = ("embedded",)
    settings: tuple[str, ...] = ("Direct", "CoT")
    generation: GenerationConfig = GenerationConfig()
    generation_by_setting: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    baselines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    prompt_layout: PromptLayout = PromptLayout.PRINCIPLED
    forced_choice: bool = True
    batch_size: int = 16
    fine_tuned_generation: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        valid = (*SETTINGS, *BASELINES)
        unknown = [s for s in self.settings if s not in valid]
        if unknown:
            raise ValueError(f"settings: unknown setting {unknown[0]!r}; choose prompt settings ({', '.join(SETTINGS)}) "
                             f"or baselines ({', '.join(BASELINES)})")
        decoding = [f.name for f in fields(GenerationConfig)]
        unknown = [s for s in self.generation_by_setting if s not in valid]
        if unknown:
            raise ValueError(f"generation_by_setting.{unknown[0]}: unknown setting; the settings are {', '.join(valid)}")
        changed = {f"generation_by_setting.{s}": c for s, c in self.generation_by_setting.items()}
        for where, changes in {**changed, "fine_tuned_generation": self.fine_tuned_generation}.items():
            wrong = sorted(set(changes) - set(decoding))
            if wrong:
                raise ValueError(f"{where}.{wrong[0]}: unknown decoding key; the decoding settings are "
                                 f"{', '.join(decoding)}")
        for name, options in self.baselines.items():
            if name not in BASELINES:
                raise ValueError(f"baselines.{name}: unknown baseline; the baselines are {', '.join(BASELINES)}")
            accepted = sorted((set(inspect.signature(BASELINES[name]).parameters) - PASSED) | {"items"})
            wrong = sorted(set(options) - set(accepted))
            if wrong:
                raise ValueError(f"baselines.{name}.{wrong[0]}: unknown option; the options of {name} are "
                                 f"{', '.join(accepted)}")
        split_scorers(self.models)  # an unknown scorer is an error here, before any model is opened


class ConfigOfRun:
    """What a run made from the ``accuracy`` config says about it (its provenance has it)."""

    provenance: Provenance

    @property
    def setting_names(self) -> tuple[str, ...]:
        return tuple(self.provenance.settings["settings"])

    @property
    def prompt_layout(self) -> str:
        """The prompt layout of the prompt settings (``principled`` or ``released``)."""
        return self.provenance.settings.get("prompt_layout", "principled")

    @property
    def decoding(self) -> GenerationConfig:
        """The config's decoding (``generation_by_setting`` may change it per setting)."""
        return GenerationConfig(**{**self.provenance.settings["generation"], "seed": self.provenance.seed})


@dataclass(frozen=True)
class AccuracyRun(ConfigOfRun, Run):
    """What an accuracy run made: ``records`` (one row per model × setting × item, in the profile's order),
    ``sets`` (one row per test set), ``traces`` (one row per baseline item, its trace as JSON text),
    ``summary`` and ``forced_summary`` (Table 2's cells, :func:`table2`) and the ``eval_sets``."""

    records: pd.DataFrame = field(default_factory=pd.DataFrame)
    sets: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(SET_COLUMNS)))
    traces: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(TRACE_COLUMNS)))
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    forced_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    eval_sets: tuple[EvalSet, ...] = kept(EVAL_SETS, default=(), repr=False)


def run(profile: str, *, seed: int = 0, backends: Mapping[str, Any] | None = None,
        data_dir: str | Path | None = None, supervision_run: SupervisionRun | None = None,
        **overrides: Any) -> AccuracyRun:
    """Evaluate every model x setting of the profile's ``accuracy`` config on its four test sets, and every
    checkpoint of ``supervision_run`` (when handed in) under the prompt it was trained with, as the
    ``SFT-<style>`` / ``LogiPT`` rows; ``seed`` seeds data generation, subsampling and decoding; ``backends``
    may hold a fine-tuned model's by its row (``"SFT-NL"``); ``data_dir`` defaults to ``$FINELOGIC_DATA_DIR``."""
    recording = Recording(FAMILY, profile, seed)
    config = resolved_config(profile, overrides)
    sets = tuple(evaluation_sets(config, seed=seed, data_dir=data_dir))
    entries, scorers = split_scorers(config.models)
    tuned = supervision_run.checkpoints() if supervision_run is not None else []
    if not entries and not tuned:
        raise ValueError("accuracy: no model to evaluate (models is empty and no supervision run with checkpoints "
                         "is handed in)")
    opened = open_models([*entries, *(spec for spec, _ in tuned)], backends, batch_size=config.batch_size)
    generation = replace(config.generation, seed=seed)
    problems = [p for s in sets for p in s.problems]
    before = call_counts(b for _, b in opened[:len(entries)])
    frames, traces, templates = [], [], {}
    memoised = any(s in MEMOISED for s in config.settings)
    with Memo("baseline-translations", source_version("finelogic.baselines.logic_lm"),
              check=translation_problem) if memoised else nullcontext() as memo:
        for (spec, backend), scorer in zip(opened, scorers):  # the profile's models (one scorer each)
            for setting in config.settings:
                decoding = replace(generation, **config.generation_by_setting.get(setting, {}))
                if setting in BASELINES:
                    options = dict(config.baselines.get(setting, {}))
                    first = options.pop("items", None)  # the first n items of each named set (None: all)
                    items = problems if first is None else [p for s in sets for p in s.problems[:first.get(s.name, 0)]]
                    log.info("accuracy: %s, %s, %d items", spec.name, setting, len(items))
                    kept = {"memo": memo} if setting in MEMOISED else {}
                    result = BASELINES[setting](items, backend, decoding, model=spec.name, **options, **kept)
                    records = result.records.assign(compat_scorer=scorer)
                    frames.append(records.join(unscored_columns(records, NOT_A_PROMPT_SETTING))
                                  .join(uncalibrated_columns(records)))
                    traces += [(t["id"], t["dataset"], t["setting"], t["model"], json.dumps(t, ensure_ascii=False))
                               for t in result.traces]
                    continue
                log.info("accuracy: %s, %s, %d items", spec.name, setting, len(problems))
                frames.append(_prompt_records(problems, backend, setting, spec.name, decoding, config, scorer))
            templates[spec.name] = backend_template(backend)
            release(backend)  # one in-process model in memory at a time
        # The fine-tuned rows are named by the model they were trained from (the first model's row, or the
        # supervision run's base when only the fine-tuned models are evaluated: ``models=()``, a study unit).
        base_name = opened[0][0].name if entries else supervision_run.base.name
        for (spec, backend), (_, setting) in zip(opened[len(entries):], tuned):  # each under its training prompt
            log.info("accuracy: %s (fine-tuned), %s prompt, %d items", spec.name, setting, len(problems))
            records = _prompt_records(problems, backend, setting, base_name,
                                     replace(generation, **config.fine_tuned_generation), config,
                                     scorers[0] if scorers else MODEL_SCORERS[0])
            frames.append(records.assign(setting=spec.name))
            templates[spec.name] = backend_template(backend)
            release(backend)
    provenance = recording.provenance(config, opened=opened, before=before, n=len(problems),
                                      data={s.name: s.source for s in sets}, templates=templates)
    records = pd.concat(frames, ignore_index=True)
    summary, forced, _ = table2(records)
    table = pd.DataFrame([(s.name, s.paper_name, len(s.problems), s.source, s.generated, s.present) for s in sets],
                         columns=list(SET_COLUMNS))
    return AccuracyRun(provenance, records=records, sets=table, summary=summary, forced_summary=forced,
                       traces=pd.DataFrame(traces, columns=list(TRACE_COLUMNS)), eval_sets=sets)


def table2(records: pd.DataFrame, by: Sequence[str] = TABLE2_KEYS) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Table 2's cells from ``records`` per ``by`` group, accuracy in % with its Wilson 95% interval and n: the answer
    markers' (:func:`finelogic.eval.accuracy.summarize`), the forced choice's and its calibrated reading's (with
    ``chance``; no row for a group without forced answers: :func:`finelogic.eval.forced_choice.summarize_forced`)."""
    return (summarize(records, by=by), summarize_forced(records, by=by),
            summarize_forced(records, by=by, column="calibrated_correct"))


def resolved_config(profile: str, overrides: Mapping[str, Any]) -> AccuracyConfig:
    """The profile's accuracy config with ``overrides`` merged (:func:`~finelogic.runs.base.resolve`)."""
    return resolve(PROFILES, profile, FAMILY, overrides)


def _prompt_records(problems: list[Problem], backend: Any, setting: str, model: str, decoding: GenerationConfig,
                    config: AccuracyConfig, scorer: str) -> pd.DataFrame:
    """One model's records under one prompt setting, with their forced-choice and calibration columns."""
    records = evaluate_accuracy(problems, backend, setting, model=model, config=decoding,
                                batch_size=config.batch_size * 4, layout=config.prompt_layout, compat_scorer=scorer)
    forced = (forced_choice(problems, records, backend) if config.forced_choice
              else unscored_columns(records, FORCED_OFF))
    records = records.join(forced)
    return records.join(contextual_calibration(records, backend))


def split_scorers(entries: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """The model entries without their ``scorer`` key, and each entry's released scorer (default ``vllm_overall``)."""
    stripped, scorers = [], []
    for entry in entries:
        scorer = entry.get("scorer", "vllm_overall") if isinstance(entry, Mapping) else "vllm_overall"
        if scorer not in MODEL_SCORERS:
            raise ValueError(f"model {entry!r}: unknown scorer {scorer!r}; choose one of {', '.join(MODEL_SCORERS)}")
        stripped.append({k: v for k, v in entry.items() if k != "scorer"} if isinstance(entry, Mapping) else entry)
        scorers.append(scorer)
    return stripped, scorers


#: The family's config in each profile (``finelogic.profiles``): FLD one PROVED, one DISPROVED and one
#: UNKNOWN item at depths 1, 5, 9, 13, 17 in tiny (every Table 5 bucket).
PROFILES = {
    "smoke": AccuracyConfig(fld=FLDSet("fld", n=6, depths=(0, 5, 17)), prontoqa_generated=ProntoQASet(n=2),
                              limit=2, models=("embedded",), settings=("Direct", "CoT"),
                              generation=GenerationConfig(max_new_tokens=16), batch_size=8),
    "tiny": AccuracyConfig(
        fld=FLDSet("fld", n=15, depths=(1, 5, 9, 13, 17)), prontoqa_generated=ProntoQASet(n=6), limit=6,
        models=("embedded",), settings=("Direct", "CoT", "Few-shot", "Sel-Inf", "Logic-LM", "SymbCoT"),
        generation=GenerationConfig(max_new_tokens=96), batch_size=17,  # 33 items: two length-sorted batches
        # Direct asks for the label only; Few-shot's worked examples leave room for a short proof and its marker.
        generation_by_setting={"Direct": {"max_new_tokens": 32}, "Few-shot": {"max_new_tokens": 64},
                               "Logic-LM": {"max_new_tokens": 128}, "SymbCoT": {"max_new_tokens": 128}},
        # The baselines send several long prompts per item: one FLD item each shows the machinery, not a score.
        baselines={"Sel-Inf": {"rounds": 1, "items": {"fld": 1}}, "Logic-LM": {"refinements": 0, "items": {"fld": 1}},
                   "SymbCoT": {"items": {"fld": 1}}}),
    # The study: the base model and every model the study's supervision run fine-tuned, under CoT, on
    # FLD at the training depths (0-2) and beyond them (3-7), 10 items per depth and label, and on the real
    # FOLIO, Multi-LogiEval and ProntoQA files (150 items each where larger).
    "study": AccuracyConfig(
        fld=FLDSet("fld", n=240, depths=tuple(range(0, 8))), prontoqa_generated=ProntoQASet(n=150, hops=(5,)),
        limit={"multi_logieval": 150, "prontoqa": 150}, models=("embedded",), settings=("CoT",),
        generation=GenerationConfig(max_new_tokens=192, stop=tuple(MARKERS.values()), keep_stop=True),
        # The symbolic styles' answers are longer than 192 tokens (results/study/target_lengths/): the
        # fine-tuned models get 768, which every gold answer fits; the base model never writes a marker.
        fine_tuned_generation={"max_new_tokens": 768},
        batch_size=32),
    # The paper's models; the released code's sampling (temperature 0.7, top-p 0.9, 3,072 new tokens; released
    # code: src/eval_vllm_overall.py). The HF models want a GPU (or point them at a vLLM server with
    # "openai:<model>@http://host:8000/v1"). This profile reproduces the paper: its prompts as the released
    # vLLM script sends them.
    "paper": AccuracyConfig(
        fld=FLDSet("fld_paper_test", scale=1.0), prontoqa_generated=ProntoQASet(n=500), limit=None,
        models=({"name": "Llama-3.1-8B-Instruct", "kind": "hf", "path": "meta-llama/Llama-3.1-8B-Instruct",
                 "device_map": "auto"},
                {"name": "Qwen-2.5-7B-Instruct", "kind": "hf", "path": "Qwen/Qwen2.5-7B-Instruct", "device_map": "auto"},
                # The paper scored its API models with the released API scorer (released code: src/evaluate_api.py).
                {"name": "GPT-4o", "kind": "openai", "model": "gpt-4o", "scorer": "api"},
                {"name": "DeepSeek-R1", "kind": "openai", "model": "deepseek-reasoner",
                 "base_url": "https://api.deepseek.com", "api_key_env": "DEEPSEEK_API_KEY", "scorer": "api"}),
        settings=("Direct", "CoT", "Few-shot", "Logic-LM", "SymbCoT", "Sel-Inf"),
        prompt_layout=PromptLayout.RELEASED,
        generation=GenerationConfig(max_new_tokens=3072, temperature=0.7, top_p=0.9), batch_size=16),
}
