"""The supervision-styles notebook's run (paper Section 4: Figure 4 and the SFT rows of Tables 2, 3 and 5).

For each style: build the training set and check every line (:func:`finelogic.sft.datasets.checked_training_set`),
fine-tune the base model on it (:func:`finelogic.sft.train.train`; a checkpoint with the same data and settings is
reused), then evaluate it and the base model under the prompt it was trained with, so every ``SFT-<style>`` row
(``model`` = the base model) stands beside its base row; FLD responses are judged step by step (Table 3).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from finelogic.baselines import logipt_data
from finelogic.data.problem import Problem
from finelogic.data.suites import EvalSet, FLDSet, ProntoQASet, TestSets, evaluation_sets
from finelogic.eval.accuracy import evaluate_accuracy
from finelogic.eval.judges import SymbolicJudge
from finelogic.eval.soundness import judge_responses
from finelogic.config import cache_dir
from finelogic.memo import Memo, source_version
from finelogic.models.base import GenerationConfig
from finelogic.models.spec import ModelSpec, parse_model
from finelogic.prompts import DIRECT
from finelogic.runs.backends import open_models, release
from finelogic.runs.base import judging_memos, resolve
from finelogic.runs.provenance import Recording
from finelogic.runs.results import EVAL_SETS, Run, kept, settings_codec
from finelogic.runs.upstream import make_command
from finelogic.sft.datasets import (SETTING, SIZE_KEYS, check_sizes, checked_training_set,
                                    problems_digest, training_problems)
from finelogic.sft.styles import STYLES, StyleError
from finelogic.sft.train import LOG_NAME, PAPER_CONFIG, TrainConfig, TrainedModel, train

log = logging.getLogger(__name__)

FAMILY = "supervision"
#: The profile section it reads (the paper calls the fine-tuned models SFT-<style>).
SECTION = "sft"


@dataclass(frozen=True)
class SFTEval(TestSets):
    """The fine-tuned models' test items, their decoding (``max_new_tokens`` must leave room for the answer
    marker after a style's long text) and batch size."""

    generation: GenerationConfig = GenerationConfig()
    batch_size: int = 16


@dataclass(frozen=True)
class SupervisionSettings:
    """The supervision family's settings (profile section ``sft``): training-set sizes
    (:data:`finelogic.sft.datasets.SIZE_KEYS`), ``styles``, ``logipt`` (also train a ``LogiPT`` row on solver
    traces, evaluated under Direct), ``base_model``, ``train`` (:class:`~finelogic.sft.train.TrainConfig`; the
    seed is the run's), ``eval`` and ``evaluate``."""

    fld_n: int = 16
    fld_unknown: int = 2
    fld_depths: tuple[int, ...] = (0, 1)
    prontoqa_n: int = 4
    prontoqa_hops: int = 3
    styles: tuple[str, ...] = STYLES
    logipt: bool = False
    base_model: Any = "embedded"
    train: TrainConfig = TrainConfig()
    eval: SFTEval = SFTEval()
    evaluate: bool = True

    def __post_init__(self) -> None:
        unknown = [s for s in self.styles if s not in STYLES]
        if unknown:
            raise ValueError(f"styles: unknown supervision style {unknown[0]!r}; choose from {', '.join(STYLES)}")
        check_sizes(self.sizes())

    def sizes(self) -> dict[str, Any]:
        """The training-set sizes (:data:`~finelogic.sft.datasets.SIZE_KEYS`)."""
        return {k: getattr(self, k) for k in SIZE_KEYS}


#: The family's settings per profile.
PROFILES = {
    # Two optimizer steps per style on a handful of shallow problems; two test items; 512 tokens hold every prompt.
    "smoke": SupervisionSettings(
        fld_n=4, fld_unknown=1, fld_depths=(0, 1), prontoqa_n=2, prontoqa_hops=3, logipt=True,
        train=TrainConfig(max_steps=2, batch_size=2, micro_batch_size=2, cutoff_len=512, lora_r=4, lora_alpha=8,
                          lora_layers=2),
        eval=SFTEval(fld=FLDSet("fld", n=2, depths=(1,)), prontoqa_generated=ProntoQASet(n=0),
                     limit={"folio": 0, "multi_logieval": 0, "prontoqa": 0},
                     generation=GenerationConfig(max_new_tokens=16), batch_size=4)),
    # LoRA on the top 8 of 30 blocks, 4 steps of 2 shallow examples per style: enough to see the loss fall
    # and the machinery work, not to learn to reason.
    "tiny": SupervisionSettings(
        fld_n=16, fld_unknown=2, fld_depths=(0, 1), prontoqa_n=4, prontoqa_hops=3,
        train=TrainConfig(max_steps=4, batch_size=2, micro_batch_size=2, cutoff_len=512, learning_rate=1e-3,
                          lora_r=16, lora_alpha=32, lora_layers=8),
        eval=SFTEval(fld=FLDSet("fld", n=4, depths=(0, 1, 2)), prontoqa_generated=ProntoQASet(n=2, hops=(3,)),
                     limit={"folio": 0, "multi_logieval": 0, "prontoqa": 2},
                     generation=GenerationConfig(max_new_tokens=96), batch_size=8)),
    # The study: shallow problems (FLD depths 0-2, a third UNKNOWN, 3-hop ProntoQA), 1,024 examples seen once,
    # LoRA r=32 on all 30 blocks; the size is the smallest above chance on the NL learning curve
    # (results/study/learning_curve/). The other families evaluate the fine-tuned models (evaluate=False).
    "study": SupervisionSettings(
        fld_n=768, fld_unknown=256, fld_depths=(0, 1, 2), prontoqa_n=256, prontoqa_hops=3,
        train=TrainConfig(learning_rate=1.5e-3, epochs=1, batch_size=4, micro_batch_size=4, cutoff_len=768,
                          lora_r=32, lora_alpha=64, lora_layers=None),
        evaluate=False),
    "paper": SupervisionSettings(
        fld_n=9500, fld_unknown=1500, fld_depths=tuple(range(0, 16)), prontoqa_n=3200, prontoqa_hops=3, logipt=True,
        base_model={"name": "Llama-3.1-8B-Instruct", "kind": "hf", "path": "meta-llama/Llama-3.1-8B-Instruct",
                    "device_map": "auto"},
        train=PAPER_CONFIG,  # Section 4, Appendix A.1: full fine-tuning (needs a GPU)
        eval=SFTEval(fld=FLDSet("fld_paper_test", scale=1.0), prontoqa_generated=ProntoQASet(n=500),
                     generation=GenerationConfig(max_new_tokens=3072, temperature=0.7, top_p=0.9), batch_size=16)),
}


@dataclass(frozen=True)
class SupervisionRun(Run):
    """The supervision run's tables: ``records`` (accuracy records, base and SFT rows), ``training`` (one row
    per trained model), ``losses`` (``setting, step, loss``), ``checks`` (per style: examples, lines judged,
    lines failing), ``steps`` (judged FLD steps), ``figure4``; live runs also hold the checkpoints and
    examples."""

    records: pd.DataFrame = field(default_factory=pd.DataFrame)
    training: pd.DataFrame = field(default_factory=pd.DataFrame)
    losses: pd.DataFrame = field(default_factory=pd.DataFrame)
    checks: pd.DataFrame = field(default_factory=pd.DataFrame)
    steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    figure4: pd.DataFrame = field(default_factory=pd.DataFrame)
    sets: tuple[EvalSet, ...] = kept(EVAL_SETS, default=(), repr=False)
    base: ModelSpec | None = kept(settings_codec(ModelSpec), default=None)
    config: GenerationConfig | None = kept(settings_codec(GenerationConfig), default=None)
    train_config: TrainConfig | None = kept(settings_codec(TrainConfig), default=None)
    trained: tuple[TrainedModel, ...] = field(default=(), repr=False, compare=False)
    examples: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False, compare=False)

    def fine_tuned(self) -> list[tuple[ModelSpec, str]]:
        """Every fine-tuned model as a ``ckpt`` spec named by its row (``SFT-NL``, ``LogiPT``), with the
        prompt setting it was trained under; FileNotFoundError (naming the command) for a checkpoint missing
        from this machine's cache."""
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


def run(profile: str, *, seed: int = 0, backends: Mapping[str, Any] | None = None,
        data_dir: str | Path | None = None, evaluate: bool = True, **overrides: Any) -> SupervisionRun:
    """Train one model per supervision style and evaluate each beside the base model (module docstring);
    ``backends`` may hold the base model's or a fine-tuned one's by its row (``"SFT-NL"``), training always
    starts from the base spec; ``evaluate=False`` trains only (``records`` and ``steps`` are then empty)."""
    recording = Recording(FAMILY, profile, seed)
    settings = resolve(PROFILES, profile, SECTION, overrides)
    config = replace(settings.train, seed=seed)
    examples, checks = training_examples(settings, seed)
    base = parse_model(settings.base_model)
    rows = [*settings.styles, *(["LogiPT"] if "LogiPT" in examples else [])]
    trained = [train(examples[row], name=row if row == "LogiPT" else f"SFT-{row}", base_model=base, config=config)
               for row in rows]
    training = pd.DataFrame([_training_row(t, style) for t, style in zip(trained, rows)])
    losses = pd.DataFrame([{"setting": t.name, "step": i + 1, "loss": loss}
                           for t in trained for i, loss in enumerate(t.losses)])

    evaluation = settings.eval
    sets = tuple(evaluation_sets(evaluation, seed=seed, data_dir=data_dir)) if evaluate and settings.evaluate else ()
    generation = replace(evaluation.generation, seed=seed)
    test_items = [p for s in sets for p in s.problems]
    records, opened = evaluate_trained(test_items, settings.base_model, trained, generation,
                                       batch_size=evaluation.batch_size, backends=backends)
    fld = records[records["dataset"] == "fld"] if not records.empty else records
    steps = pd.DataFrame()
    if not fld.empty:  # Table 3's SFT rows, judged with the soundness run's memos (what it judged is read back)
        with judging_memos() as (verdicts, read):
            steps = judge_responses(fld, {p.id: p for s in sets if s.name == "fld" for p in s.problems},
                                    SymbolicJudge(memo=verdicts), memo=read)
    provenance = recording.provenance(settings, backends=opened, models=(base.name, *(t.name for t in trained)),
                                      model_ids=(base.model_id, *(t.spec.model_id for t in trained)),
                                      n=len(test_items), data={s.name: s.source for s in sets})
    return SupervisionRun(provenance, records=records, training=training, losses=losses, checks=checks,
                          steps=steps, figure4=figure4_rows(examples), sets=sets, base=base, config=generation,
                          train_config=config, trained=tuple(trained), examples=examples)


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


def training_examples(settings: SupervisionSettings, seed: int) -> tuple[dict[str, list[dict[str, Any]]], pd.DataFrame]:
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
                   overrides: Mapping[str, Any] | None = None) -> tuple[SupervisionSettings, list[dict[str, Any]]]:
    """The profile's settings and one style's training examples, the ones :func:`run` trains on (same seed)."""
    choices = (*STYLES, "LogiPT")
    if style not in choices:
        raise ValueError(f"unknown style {style!r}; choose from {', '.join(choices)}")
    given = dict(overrides or {}, styles=STYLES[:1] if style == "LogiPT" else (style,), logipt=style == "LogiPT")
    settings = resolve(PROFILES, profile, SECTION, given)
    examples, _ = training_examples(settings, seed)
    return settings, examples[style]


def evaluate_trained(items: list[Problem], base_entry: Any, trained: list[TrainedModel],
                     generation: GenerationConfig, *, batch_size: int,
                     backends: Mapping[str, Any] | None = None) -> tuple[pd.DataFrame, list[Any]]:
    """Accuracy records of the base model (CoT; also Direct when LogiPT is trained) and of every fine-tuned
    model (its training prompt), and the backends used."""
    if not items:
        return pd.DataFrame(), []
    (base, base_backend), *tuned = open_models([base_entry, *(t.spec for t in trained)], backends,
                                               batch_size=batch_size)
    runs = [(SETTING.name, base_backend), *((spec.name, backend) for spec, backend in tuned)]
    if any(t.name == "LogiPT" for t in trained):
        runs.insert(1, (DIRECT.name, base_backend))  # LogiPT's own prompt, for the base model too
    frames = []
    for index, (setting, backend) in enumerate(runs):
        prompt = DIRECT if setting in (DIRECT.name, "LogiPT") else SETTING
        log.info("supervision: %s, %s, %d items", base.name, setting, len(items))
        records = evaluate_accuracy(items, backend, prompt, model=base.name, config=generation,
                                    batch_size=batch_size * 4)
        frames.append(records.assign(setting=setting))
        if all(other is not backend for _, other in runs[index + 1:]):
            release(backend)  # one model in memory at a time (the base one serves two prompts)
    return pd.concat(frames, ignore_index=True), list({id(b): b for _, b in runs}.values())


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
