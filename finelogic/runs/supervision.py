"""The supervision-styles notebook's run (paper Section 4: Figure 4 and the fine-tuned models of Tables 2-5).

For each style: build the training set and check every line (:func:`finelogic.sft.datasets.checked_training_set`)
and fine-tune the base model on it (:func:`finelogic.sft.train.train`; a checkpoint with the same data and settings
is reused). The run returns the checkpoints (:meth:`SupervisionRun.checkpoints`); the evaluation families
evaluate them beside the profile's models when it is handed to them (``supervision_run``): the ``SFT-<style>``
rows of Tables 2, 3 and 5 are the accuracy, soundness and depth runs', those of Table 4 the probing run's.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import pandas as pd

from finelogic.baselines import logipt_data
from finelogic.config import cache_dir
from finelogic.memo import Memo, source_version
from finelogic.models.spec import ModelSpec, parse_model
from finelogic.prompts import DIRECT
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Recording
from finelogic.runs.results import Run, kept, config_codec
from finelogic.runs.upstream import find_run, make_command
from finelogic.sft.datasets import (SETTING, SIZE_KEYS, check_sizes, checked_training_set,
                                    problems_digest, training_problems)
from finelogic.sft.styles import STYLES, StyleError
from finelogic.sft.train import LOG_NAME, PAPER_CONFIG, TrainConfig, TrainedModel, train

FAMILY = "supervision"
#: The name of the config it reads (the paper calls the fine-tuned models SFT-<style>).
CONFIG_NAME = "sft"


@dataclass(frozen=True)
class SupervisionConfig:
    """The supervision family's config (config ``sft``): training-set sizes
    (:data:`finelogic.sft.datasets.SIZE_KEYS`), ``styles``, ``logipt`` (also train a ``LogiPT`` row on solver
    traces, evaluated under Direct), ``base_model``, ``train`` (:class:`~finelogic.sft.train.TrainConfig`; the
    seed is the run's)."""

    fld_n: int = 16
    fld_unknown: int = 2
    fld_depths: tuple[int, ...] = (0, 1)
    prontoqa_n: int = 4
    prontoqa_hops: int = 3
    styles: tuple[str, ...] = STYLES
    logipt: bool = False
    base_model: Any = "embedded"
    train: TrainConfig = TrainConfig()

    def __post_init__(self) -> None:
        unknown = [s for s in self.styles if s not in STYLES]
        if unknown:
            raise ValueError(f"styles: unknown supervision style {unknown[0]!r}; choose from {', '.join(STYLES)}")
        check_sizes(self.sizes())

    def sizes(self) -> dict[str, Any]:
        """The training-set sizes (:data:`~finelogic.sft.datasets.SIZE_KEYS`)."""
        return {k: getattr(self, k) for k in SIZE_KEYS}


#: The family's config per profile.
PROFILES = {
    # Two optimizer steps per style on a handful of shallow problems; 512 tokens hold every prompt.
    "smoke": SupervisionConfig(
        fld_n=4, fld_unknown=1, fld_depths=(0, 1), prontoqa_n=2, prontoqa_hops=3, logipt=True,
        train=TrainConfig(max_steps=2, batch_size=2, micro_batch_size=2, cutoff_len=512, lora_r=4, lora_alpha=8,
                          lora_layers=2)),
    # LoRA on the top 8 of 30 blocks, 4 steps of 2 shallow examples per style: the machinery at work (training,
    # checkpoints, their evaluation), not learning: 4 steps are too few for the loss to fall reliably.
    "tiny": SupervisionConfig(
        fld_n=16, fld_unknown=2, fld_depths=(0, 1), prontoqa_n=4, prontoqa_hops=3,
        train=TrainConfig(max_steps=4, batch_size=2, micro_batch_size=2, cutoff_len=512, learning_rate=1e-3,
                          lora_r=16, lora_alpha=32, lora_layers=8)),
    # The study: shallow problems (FLD depths 0-2, a third UNKNOWN, 3-hop ProntoQA), 1,024 examples seen once,
    # LoRA r=32 on all 30 blocks; the size is the smallest above chance on the NL learning curve
    # (results/study/learning_curve/).
    "study": SupervisionConfig(
        fld_n=768, fld_unknown=256, fld_depths=(0, 1, 2), prontoqa_n=256, prontoqa_hops=3,
        train=TrainConfig(learning_rate=1.5e-3, epochs=1, batch_size=4, micro_batch_size=4, cutoff_len=768,
                          lora_r=32, lora_alpha=64, lora_layers=None)),
    "paper": SupervisionConfig(
        fld_n=9500, fld_unknown=1500, fld_depths=tuple(range(0, 16)), prontoqa_n=3200, prontoqa_hops=3, logipt=True,
        base_model={"name": "Llama-3.1-8B-Instruct", "kind": "hf", "path": "meta-llama/Llama-3.1-8B-Instruct",
                    "device_map": "auto"},
        train=PAPER_CONFIG),  # Section 4, Appendix A.1: full fine-tuning (needs a GPU)
}


@dataclass(frozen=True)
class SupervisionRun(Run):
    """The supervision run's tables: ``training`` (one row per trained model), ``losses`` (``setting, step,
    loss``), ``checks`` (per style: examples, lines judged, lines failing), ``figure4``; the ``base`` model and
    the training settings; live runs also hold the trained models and examples."""

    training: pd.DataFrame = field(default_factory=pd.DataFrame)
    losses: pd.DataFrame = field(default_factory=pd.DataFrame)
    checks: pd.DataFrame = field(default_factory=pd.DataFrame)
    figure4: pd.DataFrame = field(default_factory=pd.DataFrame)
    base: ModelSpec | None = kept(config_codec(ModelSpec), default=None)
    train_config: TrainConfig | None = kept(config_codec(TrainConfig), default=None)
    trained: tuple[TrainedModel, ...] = field(default=(), repr=False, compare=False)
    examples: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False, compare=False)

    def checkpoints(self) -> list[tuple[ModelSpec, str]]:
        """Every fine-tuned model as a ``ckpt`` spec named by its row (``SFT-NL``, ``LogiPT``), with the
        prompt setting it was trained under (the evaluation families evaluate it under that prompt);
        FileNotFoundError (naming the command) for a checkpoint missing from this machine's cache."""
        root = cache_dir() / "sft"
        out = []
        for row in self.training.to_dict("records"):
            path = root / str(row["checkpoint"])
            if not (path / LOG_NAME).is_file():
                raise FileNotFoundError(
                    f"{row['setting']}: checkpoint {path} is not in this cache (checkpoints are not committed); "
                    f"train it with `{make_command(FAMILY, self.provenance.profile)}`")
            out.append((ModelSpec(str(row["setting"]), "ckpt", path=str(path)),
                        DIRECT.name if row["setting"] == "LogiPT" else SETTING.name))
        return out


def run(profile: str, *, seed: int = 0, **overrides: Any) -> SupervisionRun:
    """Train one model per supervision style (and LogiPT's when the section says so) from the base model
    (module docstring); the run hands the checkpoints on (:meth:`SupervisionRun.checkpoints`)."""
    recording = Recording(FAMILY, profile, seed)
    settings = resolve(PROFILES, profile, CONFIG_NAME, overrides)
    config = replace(settings.train, seed=seed)
    examples, checks = training_examples(settings, seed)
    base = parse_model(settings.base_model)
    rows = [*settings.styles, *(["LogiPT"] if "LogiPT" in examples else [])]
    trained = [train(examples[row], name=row if row == "LogiPT" else f"SFT-{row}", base_model=base, config=config)
               for row in rows]
    training = pd.DataFrame([_training_row(t, style) for t, style in zip(trained, rows)])
    losses = pd.DataFrame([{"setting": t.name, "step": i + 1, "loss": loss}
                           for t in trained for i, loss in enumerate(t.losses)])
    provenance = recording.provenance(settings, models=(base.name, *(t.name for t in trained)),
                                      model_ids=(base.model_id, *(t.spec.model_id for t in trained)),
                                      n=sum(t.examples for t in trained))
    return SupervisionRun(provenance, training=training, losses=losses, checks=checks,
                          figure4=figure4_rows(examples), base=base, train_config=config, trained=tuple(trained),
                          examples=examples)


def written(profile: str, seed: int = 0) -> SupervisionRun:
    """The supervision run written to ``results/<profile>/supervision`` (its checkpoints for the evaluation
    families); :class:`~finelogic.runs.upstream.UpstreamMissing` naming the command that makes it otherwise."""
    return find_run(SupervisionRun, FAMILY, profile, seed)


def training_data_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as the ``supervision-training-data`` memo keeps it (None: nothing): a style's
    checked set ``{texts, lines, failures}`` or a LogiPT trace ``{trace}`` / ``{error}``."""
    if type(value) is dict and value.keys() == {"texts", "lines", "failures"}:
        if type(value["lines"]) is not int or any(type(value[k]) is not list or any(type(t) is not str for t in value[k])
                                                   for k in ("texts", "failures")):
            return "a checked set's texts and failures must be lists of strings, its lines a whole number"
        return None
    if type(value) is dict and len(value) == 1 and type(value.get("trace", value.get("error"))) is str:
        return None
    return f"a checked set {{texts, lines, failures}} or a trace {{trace}} / {{error}} was expected, not {str(value)[:60]}"


def training_examples(settings: SupervisionConfig, seed: int) -> tuple[dict[str, list[dict[str, Any]]], pd.DataFrame]:
    """Each style's training examples (and ``LogiPT``'s when ``settings.logipt``) and the style checks (per
    style: examples, lines judged by :func:`finelogic.sft.style_checks.check`, lines failing), from one memo
    shared with ``finelogic train`` and ``finelogic export-llamafactory``; StyleError if a line fails."""
    styles = settings.styles
    problems = training_problems(settings.sizes(), seed)
    version = source_version("finelogic.sft.datasets", "finelogic.baselines.logipt")
    with Memo("supervision-training-data", version, check=training_data_problem) as memo:
        digest = problems_digest(problems)
        checked = {style: checked_training_set(style, problems, seed, memo=memo, digest=digest) for style in styles}
        examples = {style: c.examples for style, c in checked.items()}
        checks = pd.DataFrame([{"style": c.style, "examples": len(c.examples), "lines": c.lines,
                                "failing": len(c.failures)} for c in checked.values()],
                              columns=["style", "examples", "lines", "failing"])
        failing = checks[checks["failing"] > 0]
        if not failing.empty:
            raise StyleError(f"built training texts fail their check: {failing.to_dict('records')}; first: "
                             + "; ".join(f for c in checked.values() for f in c.failures[:1]))
        if settings.logipt:
            by_id = {p.id: p for p in problems}
            order = [by_id[e["id"]] for e in examples[styles[0]]] if styles else problems
            examples["LogiPT"] = logipt_data(order, skip_unusable=True, memo=memo)
    return examples, checks


def style_examples(profile: str, style: str, seed: int = 0,
                   overrides: Mapping[str, Any] | None = None) -> tuple[SupervisionConfig, list[dict[str, Any]]]:
    """The profile's settings and one style's training examples, the ones :func:`run` trains on (same seed)."""
    choices = (*STYLES, "LogiPT")
    if style not in choices:
        raise ValueError(f"unknown style {style!r}; choose from {', '.join(choices)}")
    given = dict(overrides or {}, styles=STYLES[:1] if style == "LogiPT" else (style,), logipt=style == "LogiPT")
    settings = resolve(PROFILES, profile, CONFIG_NAME, given)
    examples, _ = training_examples(settings, seed)
    return settings, examples[style]


def figure4_rows(examples: Mapping[str, list[dict[str, Any]]]) -> pd.DataFrame:
    """Figure 4: the first FLD training problem with a proof as each style writes it."""
    columns = ["style", "id", "label", "user", "text"]
    if not examples:
        return pd.DataFrame(columns=columns)
    first = next(e for e in next(iter(examples.values()))
                 if e["meta"]["dataset"] == "fld" and e["meta"]["label"] != "UNKNOWN")
    rows = [(style, e["id"], first["meta"]["label"], first["messages"][1]["content"], e["messages"][-1]["content"])
            for style, chosen in examples.items() for e in chosen if e["id"] == first["id"]]
    return pd.DataFrame(rows, columns=columns)


def _training_row(trained: TrainedModel, style: str) -> dict[str, Any]:
    first, last = trained.loss_drop(window=max(1, min(3, len(trained.losses) // 3)))
    return {"setting": trained.name, "style": style, "examples": trained.examples, "steps": len(trained.losses),
            "tokens": trained.tokens, "target_tokens": trained.target_tokens, "seconds": round(trained.seconds, 1),
            "tokens_per_s": round(trained.tokens_per_second, 1), "loss_first": round(first, 3),
            "loss_last": round(last, 3), "method": trained.config["method"], "checkpoint": trained.path.name}
