"""Fine-tuning one supervision style with TRL's ``SFTTrainer``: the paper-scale path, which ``accelerate``
launches on several processes (DeepSpeed ZeRO-3 on GPUs, the paper's setup through LLaMA-Factory; DDP over
gloo on a CPU), where the one-process loop of :mod:`finelogic.sft.train` cannot hold an 8B full fine-tune.
:mod:`finelogic.runs.training` resolves a profile (``accelerate launch -m finelogic.runs.training``); this
module is the trainer, profile-free. The output folder holds TRL's ``checkpoint-<step>/`` folders and, at the
end, what the loop writes (so ``ckpt:<out>`` opens it); ``training.json`` holds the data and config fingerprint,
so a folder trained on other data or config is refused rather than resumed. The examples are encoded as the
loop encodes them (:func:`finelogic.sft.train.encode_example`: the same tokens, the loss on the same target
tokens). TRL is the extra ``[train]``.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from finelogic.models.spec import ModelSpec, parse_model
from finelogic.typed_config import as_data
from finelogic.sft.recipes import BASE_MODELS, trl_arguments
from finelogic.sft.train import encode_example, LOG_NAME, TrainConfig, fingerprint, lora_config

log = logging.getLogger(__name__)

#: The trainer's record of a run (fingerprint, base model, style), beside its checkpoints.
TRAINING_RECORD = "training.json"


def trl_available() -> bool:
    """Whether TRL (the ``[train]`` extra) is installed."""
    return importlib.util.find_spec("trl") is not None


@dataclass(frozen=True)
class TrlTrained:
    """A style trained with TRL: the folder (a ``ckpt`` model) and what the run did."""

    name: str
    path: Path
    steps: int
    losses: tuple[float, ...]
    tokens: int
    target_tokens: int
    seconds: float
    peak_rss_mb: float
    resumed_from: str | None
    processes: int

    @property
    def spec(self) -> ModelSpec:
        return ModelSpec(self.name, "ckpt", path=str(self.path))


def base_spec(base: Any) -> ModelSpec:
    """``llama3`` / ``qwen`` (the paper's base models, :data:`finelogic.sft.recipes.BASE_MODELS`) or any
    in-process model spec, as a :class:`~finelogic.models.spec.ModelSpec`."""
    if isinstance(base, str) and base in BASE_MODELS:
        model = BASE_MODELS[base]
        return parse_model({"name": model.name, "kind": "hf", "path": model.hub})
    spec = parse_model(base)
    if spec.kind not in ("embedded", "hf", "ckpt"):
        raise ValueError(f"can only fine-tune in-process models (embedded, hf, ckpt), not {spec.kind!r}")
    return spec


def sft_arguments(config: TrainConfig, *, processes: int, paper_recipe: bool, out: Path,
                  save_steps: int | None, cuda: bool) -> dict[str, Any]:
    """``trl.SFTConfig`` keyword arguments for ``config`` on ``processes`` processes: the paper recipe's
    (:func:`finelogic.sft.recipes.trl_arguments`), else ``config.batch_size`` split into per-device micro-batches
    of at most ``micro_batch_size`` and accumulation, so the global batch is kept on any number of processes."""
    if paper_recipe:
        arguments = trl_arguments(gpus=processes)
        arguments["gradient_checkpointing"] = True  # LLaMA-Factory's default (disable_gradient_checkpointing: false)
    else:
        per_device = max(1, min(config.micro_batch_size, config.batch_size // processes))
        scheduler = config.scheduler if config.scheduler == "cosine" else (
            "constant_with_warmup" if config.warmup_ratio else "constant")
        arguments = {"learning_rate": config.learning_rate, "num_train_epochs": config.epochs,
                     "per_device_train_batch_size": per_device,
                     "gradient_accumulation_steps": max(1, round(config.batch_size / (per_device * processes))),
                     "lr_scheduler_type": scheduler, "warmup_steps": config.warmup_ratio,  # a float in [0, 1) is a ratio
                     "bf16": config.dtype == "bfloat16" or config.autocast == "bfloat16",
                     "max_length": config.cutoff_len}
    if config.max_steps:
        arguments["max_steps"] = config.max_steps
    if save_steps:
        arguments.update(save_strategy="steps", save_steps=save_steps)
    arguments.setdefault("save_strategy", "epoch")
    arguments.update(output_dir=str(out), seed=config.seed, data_seed=config.seed, logging_steps=1,
                     report_to="none", weight_decay=0.0, max_grad_norm=1.0,
                     dataloader_num_workers=0, save_only_model=False, disable_tqdm=True,
                     use_cpu=not cuda)
    if not cuda:  # the CPU trains float32 weights; bf16 only as autocast, when asked (TrainConfig.autocast)
        arguments["bf16"] = config.autocast == "bfloat16"
        if processes > 1:
            arguments["ddp_backend"] = "gloo"
    return arguments


def train_with_trl(examples: Sequence[Mapping[str, Any]], *, style: str, base: Any, config: TrainConfig,
                   out: str | Path, paper_recipe: bool = False, resume: bool = True,
                   save_steps: int | None = None, profile: str = "") -> TrlTrained:
    """Fine-tune ``base`` (``llama3``, ``qwen`` or a model spec: :func:`base_spec`) on one ``style``'s
    ``examples`` with TRL, continuing from the last whole ``checkpoint-<step>`` in ``out`` unless ``resume`` is
    False; ``paper_recipe``: the released recipe's arguments; ``save_steps`` None: a checkpoint per epoch.
    :func:`finelogic.runs.training.train_style` calls it. ImportError (naming the extra) without TRL;
    ValueError when ``out`` holds a training on other data or config and ``resume`` is on."""
    if not trl_available():
        raise ImportError("finelogic train needs TRL: pip install -e '.[train]'")
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    import torch
    import torch.distributed as dist

    from finelogic.sft.datasets import write_jsonl

    # accelerate's launcher sets these; the process group itself starts with the trainer's arguments.
    processes, main = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0")) == 0
    spec = base_spec(base)
    name = style if style == "LogiPT" else f"SFT-{style}"
    folder = Path(out)
    digest = fingerprint(spec, examples, config)
    record_path = folder / TRAINING_RECORD
    last = last_whole_checkpoint(folder, remove_partial=main) if resume and folder.is_dir() else None
    if last and record_path.is_file():
        earlier = json.loads(record_path.read_text(encoding="utf-8"))
        if earlier.get("fingerprint") != digest:
            raise ValueError(f"{folder} holds a training on other data or config ({earlier.get('fingerprint')} != "
                             f"{digest}); pass another --out, or --fresh to start again there")
    if main:
        folder.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps({"fingerprint": digest, "name": name, "style": style, "profile": profile,
                                           "base_model": spec.model_id, "config": as_data(config)}, indent=1),
                               encoding="utf-8")

    cuda = torch.cuda.is_available()
    from finelogic.models.embedded import converted_path

    path = str(spec.path) if spec.path is not None else str(converted_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model_kwargs: dict[str, Any] = {"dtype": config.dtype if cuda else "float32"}
    if cuda and importlib.util.find_spec("flash_attn") is not None:
        model_kwargs["attn_implementation"] = "flash_attention_2"  # the recipe's flash_attn: fa2
    arguments = sft_arguments(config, processes=processes, paper_recipe=paper_recipe, out=folder,
                              save_steps=save_steps, cuda=cuda)
    peft_config = None
    if config.method == "lora":
        from transformers import AutoConfig

        n_layers = AutoConfig.from_pretrained(path).num_hidden_layers if config.lora_layers is not None else 0
        peft_config = lora_config(config, n_layers)
    # The loop's encoding (:func:`finelogic.sft.train.encode_example`): the same tokens and target labels.
    encoded = [encode_example(tokenizer, example, arguments["max_length"]) for example in examples]
    dataset = Dataset.from_list([{"input_ids": e.input_ids, "labels": e.labels} for e in encoded])
    trainer = _counting(SFTTrainer)(model=path, args=SFTConfig(**arguments, model_init_kwargs=model_kwargs),
                                    train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config)
    lengths = [len(ids) for ids in trainer.train_dataset["input_ids"]]  # the whole set, as tokenised and cut
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=last)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kB
    tokens, targets = trainer.counted
    if dist.is_available() and dist.is_initialized():  # summed over processes (peak memory: the machine's)
        values = torch.tensor([float(tokens), float(targets), peak], dtype=torch.float64)
        dist.all_reduce(values)
        tokens, targets, peak = int(values[0]), int(values[1]), float(values[2])

    losses = tuple(float(e["loss"]) for e in trainer.state.log_history if "loss" in e)
    accelerator = trainer.accelerator
    if config.method == "lora":
        if accelerator.is_main_process:
            accelerator.unwrap_model(trainer.model).merge_and_unload().save_pretrained(folder, safe_serialization=True)
    else:
        trainer.save_model(str(folder))  # gathers ZeRO-3 shards (zero3_save_16bit_model)
    if accelerator.is_main_process:
        tokenizer.save_pretrained(folder)
        write_jsonl(map(dict, examples), folder / "train.jsonl")
        record = {"name": name, "base_model": spec.model_id, "config": as_data(config), "trainer": "trl",
                  "trl_arguments": {k: v for k, v in arguments.items() if k != "output_dir"},
                  "examples": len(examples), "set_tokens": sum(lengths),
                  "set_at_cutoff": sum(n >= arguments["max_length"] for n in lengths), "losses": list(losses), "tokens": tokens, "target_tokens": targets,
                  "seconds": seconds, "peak_rss_mb": peak, "processes": accelerator.num_processes,
                  "resumed_from": Path(last).name if last else None, "steps": trainer.state.global_step,
                  "torch_threads": torch.get_num_threads()}
        (folder / LOG_NAME).write_text(json.dumps(record, indent=1), encoding="utf-8")
    accelerator.wait_for_everyone()
    log.info("%s: %d steps in %.1f s on %d process(es), %d tokens; saved to %s", name, trainer.state.global_step,
             seconds, accelerator.num_processes, tokens, folder)
    return TrlTrained(name=name, path=folder, steps=trainer.state.global_step, losses=losses, tokens=tokens,
                      target_tokens=targets, seconds=seconds, peak_rss_mb=peak,
                      resumed_from=Path(last).name if last else None, processes=accelerator.num_processes)


def last_whole_checkpoint(folder: Path, *, remove_partial: bool = False) -> str | None:
    """The last ``checkpoint-<step>`` in ``folder`` saved whole (:func:`unsaved_reason`), or None. A process
    killed while saving leaves a folder that cannot be resumed ("Expecting value"): it is passed over with a
    warning naming it (and, with ``remove_partial``, deleted: the trainer saves that step again)."""
    import re
    import shutil

    steps = sorted((int(m.group(1)), path) for path in Path(folder).iterdir()
                   if path.is_dir() and (m := re.fullmatch(r"checkpoint-(\d+)", path.name)))
    for _, path in reversed(steps):
        reason = unsaved_reason(path)
        if reason is None:
            return str(path)
        log.warning("%s was not saved whole (its trainer_state.json %s: the process was stopped while saving "
                    "it); %s", path, reason, "deleted, resuming from the one before" if remove_partial
                    else "resuming from the one before")
        if remove_partial:
            shutil.rmtree(path, ignore_errors=True)
    return None


def saved_whole(checkpoint: Path) -> bool:
    """Whether the trainer finished saving ``checkpoint`` (see :func:`unsaved_reason`)."""
    return unsaved_reason(checkpoint) is None


def unsaved_reason(checkpoint: Path) -> str | None:
    """Why ``checkpoint`` was not saved whole (its ``trainer_state.json``, written last, is missing, cut or
    has no ``global_step``), or None when it was."""
    try:
        state = json.loads((Path(checkpoint) / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"cannot be read ({type(error).__name__}: {error})"
    return None if isinstance(state, dict) and "global_step" in state else "has no global_step"


def _counting(trainer_class: type) -> type:
    """``trainer_class`` counting, in this process since this run started, the tokens it trains on and their
    target tokens, in ``compute_loss`` (the data loader collates a batch ahead)."""

    class Counting(trainer_class):
        counted = (0, 0)

        def compute_loss(self, model, inputs, *args, **kwargs):  # noqa: ANN001
            mask = inputs.get("attention_mask")
            tokens = int(mask.sum()) if mask is not None else int(inputs["input_ids"].numel())
            targets = int((inputs["labels"][:, 1:] != -100).sum()) if "labels" in inputs else 0
            self.counted = (self.counted[0] + tokens, self.counted[1] + targets)
            return super().compute_loss(model, inputs, *args, **kwargs)

        def _load_optimizer_and_scheduler(self, checkpoint):  # noqa: ANN001, ANN202
            # transformers 4.57 maps the optimizer state to args.device when world_size > 1, which on CPU
            # processes is "cpu:<rank>": torch.load cannot restore that location. Plain DDP on CPUs only.
            import torch

            names = ("optimizer.pt", "scheduler.pt")
            if (checkpoint is None or self.args.device.type != "cpu" or self.args.world_size == 1
                    or self.is_deepspeed_enabled or self.is_fsdp_enabled
                    or not all(os.path.isfile(os.path.join(checkpoint, n)) for n in names)):
                return super()._load_optimizer_and_scheduler(checkpoint)
            self.optimizer.load_state_dict(torch.load(os.path.join(checkpoint, names[0]), map_location="cpu",
                                                      weights_only=True))
            self.lr_scheduler.load_state_dict(torch.load(os.path.join(checkpoint, names[1]), weights_only=True))
            return None

    return Counting
