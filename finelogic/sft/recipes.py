"""The paper's fine-tuning recipe, written once as data, with where each value comes from.

Section 4 fully fine-tunes Llama-3.1-8B-Instruct and Qwen-2.5-7B-Instruct on each supervision style. Some
hyper-parameters are stated in the paper (learning rate and epochs in Section 5.1, four A100 GPUs in
Appendix D); the rest are read from the authors' released LLaMA-Factory config ``logical.yaml``
(``book/released-code.md``, "Models and generation"; the file itself is not copied). Every value is a
:class:`Setting` named by its LLaMA-Factory key, so one table feeds :data:`finelogic.sft.train.PAPER_CONFIG`,
the LLaMA-Factory export (:mod:`finelogic.sft.export`) and the TRL trainer (:mod:`finelogic.sft.trl_train`),
and the three cannot drift apart; :func:`recipe_table` shows it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

PAPER = "paper"
RELEASED = "released code: logical.yaml"


@dataclass(frozen=True)
class Setting:
    """One hyper-parameter: its LLaMA-Factory key, value, source and (optional) a note."""

    key: str
    value: Any
    source: str
    note: str = ""


@dataclass(frozen=True)
class BaseModel:
    """A base model the paper fine-tuned: hub name and LLaMA-Factory chat template."""

    name: str
    hub: str
    template: str
    source: str


#: The two base models (paper Section 4 / Section 5.1), keyed by their LLaMA-Factory template name.
BASE_MODELS: dict[str, BaseModel] = {
    "llama3": BaseModel("Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "llama3",
                        f"{PAPER} Section 5.1; template: {RELEASED}"),
    "qwen": BaseModel("Qwen-2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "qwen",
                      f"{PAPER} Section 5.1; template: LLaMA-Factory's name for Qwen2.5's chat format "
                      "(the released file shows only llama3)"),
}

#: GPUs of the paper's runs (Appendix D: four A100s; ``CUDA_VISIBLE_DEVICES=0,1,2,3`` in the released script).
GPUS = 4

#: The recipe, in LLaMA-Factory's keys and the released file's values.
PAPER_RECIPE: tuple[Setting, ...] = (
    Setting("stage", "sft", RELEASED),
    Setting("finetuning_type", "full", f"{PAPER} Section 4 (full fine-tuning); {RELEASED}"),
    Setting("deepspeed", "examples/deepspeed/ds_z3_config.json", RELEASED, "DeepSpeed ZeRO-3"),
    Setting("flash_attn", "fa2", RELEASED, "FlashAttention-2: GPU only"),
    Setting("template", "llama3", RELEASED, "qwen for Qwen-2.5-7B-Instruct (BASE_MODELS)"),
    Setting("cutoff_len", 2500, RELEASED, "tokens, prompt + answer"),
    Setting("per_device_train_batch_size", 8, RELEASED),
    Setting("gradient_accumulation_steps", 1, RELEASED),
    Setting("learning_rate", 1.0e-6, f"{PAPER} Section 5.1; {RELEASED}"),
    Setting("num_train_epochs", 3.0, f"{PAPER} Section 5.1; {RELEASED}"),
    Setting("lr_scheduler_type", "cosine", RELEASED),
    Setting("warmup_ratio", 0.0, RELEASED),
    Setting("bf16", True, RELEASED),
    Setting("save_strategy", "epoch", RELEASED),
)


def value(key: str) -> Any:
    """The recipe's value for a LLaMA-Factory ``key`` (KeyError naming the known ones)."""
    for setting in PAPER_RECIPE:
        if setting.key == key:
            return setting.value
    raise KeyError(f"the paper recipe has no {key!r}; known: {', '.join(s.key for s in PAPER_RECIPE)}")


def global_batch(gpus: int = GPUS) -> int:
    """Examples per optimizer step: per-device batch x accumulation x GPUs (8 x 1 x 4 = 32)."""
    return value("per_device_train_batch_size") * value("gradient_accumulation_steps") * gpus


def train_config_fields() -> dict[str, Any]:
    """The :class:`finelogic.sft.train.TrainConfig` fields the recipe sets (``micro_batch_size``, a memory
    knob, is the profile's)."""
    return {"method": value("finetuning_type"), "learning_rate": value("learning_rate"),
            "epochs": value("num_train_epochs"), "batch_size": global_batch(),
            "cutoff_len": value("cutoff_len"), "scheduler": value("lr_scheduler_type"),
            "warmup_ratio": value("warmup_ratio"), "dtype": "bfloat16" if value("bf16") else "float32"}


def trl_arguments(*, gpus: int = GPUS) -> dict[str, Any]:
    """``trl.SFTConfig`` arguments with the recipe's values (LLaMA-Factory's ``cutoff_len`` is TRL's
    ``max_length``); ``gpus`` other than 4 keep the global batch of 32 by raising gradient accumulation."""
    per_device = value("per_device_train_batch_size")
    target = global_batch()
    if target % (per_device * gpus):
        raise ValueError(f"a global batch of {target} cannot be split over {gpus} processes of {per_device}")
    return {"learning_rate": value("learning_rate"), "num_train_epochs": value("num_train_epochs"),
            "per_device_train_batch_size": per_device,
            "gradient_accumulation_steps": target // (per_device * gpus),
            "lr_scheduler_type": value("lr_scheduler_type"), "warmup_ratio": value("warmup_ratio"),
            "bf16": value("bf16"), "save_strategy": value("save_strategy"), "max_length": value("cutoff_len")}


def llamafactory_config(base: str, dataset: str, output_dir: str, *, dataset_dir: str = "data") -> dict[str, Any]:
    """The LLaMA-Factory training YAML equivalent to the released one for ``base`` (``llama3`` or ``qwen``) on
    the registered ``dataset``: the released values with the model, template, dataset and output folder filled
    in (as the released script rewrote them per run)."""
    if base not in BASE_MODELS:
        raise ValueError(f"unknown base model {base!r}; choose from {', '.join(BASE_MODELS)}")
    model = BASE_MODELS[base]
    config: dict[str, Any] = {"model_name_or_path": model.hub}
    for setting in PAPER_RECIPE:
        config[setting.key] = setting.value
    config.update(template=model.template, dataset=dataset, dataset_dir=dataset_dir, output_dir=output_dir,
                  do_train=True, overwrite_cache=True, logging_steps=10, plot_loss=True, report_to="none")
    return config


def recipe_table() -> pd.DataFrame:
    """The recipe as a table: ``key, value, source, note`` (plus the GPUs and the global batch)."""
    table = [{"key": s.key, "value": s.value, "source": s.source, "note": s.note} for s in PAPER_RECIPE]
    table.append({"key": "GPUs", "value": GPUS, "source": f"{PAPER} Appendix D (A100); {RELEASED} script",
                  "note": "CUDA_VISIBLE_DEVICES=0,1,2,3"})
    table.append({"key": "global batch", "value": global_batch(), "source": "derived", "note": "8 x 1 x 4"})
    return pd.DataFrame(table, columns=["key", "value", "source", "note"])


def gpu_hours(tokens_per_epoch: float, tokens_per_second: float, *, gpus: int = GPUS,
              epochs: float | None = None) -> float:
    """GPU-hours to train one style: ``epochs`` (default the recipe's) passes over ``tokens_per_epoch`` at
    ``tokens_per_second`` over all ``gpus`` (a throughput you measure or assume)."""
    if tokens_per_second <= 0:
        raise ValueError("tokens_per_second must be positive")
    passes = value("num_train_epochs") if epochs is None else epochs
    return passes * tokens_per_epoch / tokens_per_second / 3600 * gpus
