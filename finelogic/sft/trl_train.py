"""Fine-tuning one supervision style with TRL's ``SFTTrainer``: the paper-scale path, which ``accelerate``
launches on several processes (DeepSpeed ZeRO-3 on GPUs, the paper's setup through LLaMA-Factory; DDP over
gloo on a CPU), where the one-process loop of :mod:`finelogic.sft.train` cannot hold an 8B full fine-tune.
:mod:`finelogic.runs.training` resolves a profile's data and settings (``accelerate launch -m
finelogic.runs.training``; ``finelogic train`` in one process); this module is the trainer, profile-free.

Each chat example becomes TRL's prompt-completion form, so the loss covers the assistant turn only, as in
the loop. Hyper-parameters: the profile's :class:`~finelogic.sft.train.TrainConfig`; for the paper the
released recipe's (:func:`finelogic.sft.recipes.trl_arguments`: the global batch of 32 kept on any number of
processes by gradient accumulation, gradient checkpointing on). The output folder holds TRL's
``checkpoint-<step>/`` folders and, at the end, the final model (LoRA merged), its tokenizer,
``train_log.json`` (the loop's format) and ``train.jsonl``, so ``ckpt:<out>`` opens it. A rerun resumes from
the last checkpoint saved whole; ``run.json`` holds the data and settings fingerprint, and a folder trained
on other data or settings is refused rather than resumed. TRL is the optional extra ``[train]``.
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

from finelogic.sft.train import LOG_NAME, TrainConfig, _config_dict, fingerprint

log = logging.getLogger(__name__)

#: The trainer's record of a run (fingerprint, base model, style), beside its checkpoints.
RUN_NAME = "run.json"
CONFIGS = Path(__file__).parent / "configs" / "accelerate"


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
    def spec(self) -> Any:
        from finelogic.models.spec import ModelSpec

        return ModelSpec(self.name, "ckpt", path=str(self.path))


def base_spec(base: Any) -> Any:
    """``llama3`` / ``qwen`` (the paper's base models, :data:`finelogic.sft.recipes.BASE_MODELS`) or any
    in-process model spec, as a :class:`~finelogic.models.spec.ModelSpec`."""
    from finelogic.models.spec import parse_model
    from finelogic.sft.recipes import BASE_MODELS

    if isinstance(base, str) and base in BASE_MODELS:
        model = BASE_MODELS[base]
        return parse_model({"name": model.name, "kind": "hf", "path": model.hub})
    spec = parse_model(base)
    if spec.kind not in ("embedded", "hf", "ckpt"):
        raise ValueError(f"can only fine-tune in-process models (embedded, hf, ckpt), not {spec.kind!r}")
    return spec


def model_path(spec: Any) -> str:
    """A local folder or hub name ``from_pretrained`` reads (the embedded model's converted folder)."""
    if spec.path is not None:
        return str(spec.path)
    from finelogic.models.embedded import converted_path

    return str(converted_path())


def as_prompt_completion(examples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """TRL's conversational prompt-completion rows: the loss then covers the assistant turn only.

    Raises:
        ValueError: an example not ending with the assistant turn (names its id).
    """
    rows = []
    for example in examples:
        messages = [{"role": m["role"], "content": m["content"]} for m in example.get("messages") or ()]
        if not messages or messages[-1]["role"] != "assistant":
            raise ValueError(f"training example {example.get('id', '?')!r}: 'messages' must end with the assistant turn")
        rows.append({"prompt": messages[:-1], "completion": messages[-1:]})
    return rows


def sft_arguments(config: TrainConfig, *, processes: int, paper_recipe: bool, out: Path,
                  save_steps: int | None, cuda: bool) -> dict[str, Any]:
    """``trl.SFTConfig`` keyword arguments for ``config`` on ``processes`` processes.

    The paper recipe takes :func:`finelogic.sft.recipes.trl_arguments` (the released per-device batch
    of 8); other profiles split ``config.batch_size`` into per-device micro-batches of at most
    ``micro_batch_size`` and accumulation, so the global batch is kept on any number of processes."""
    from finelogic.sft.recipes import trl_arguments

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
                     report_to="none", weight_decay=0.0, max_grad_norm=1.0, completion_only_loss=True,
                     dataloader_num_workers=0, save_only_model=False, disable_tqdm=True,
                     use_cpu=not cuda)
    if not cuda and processes > 1:
        arguments["ddp_backend"] = "gloo"
    if not cuda:  # the CPU trains float32 weights; bf16 only as autocast, when asked (TrainConfig.autocast)
        arguments["bf16"] = config.autocast == "bfloat16"
    return arguments


def train_with_trl(examples: Sequence[Mapping[str, Any]], *, style: str, base: Any, config: TrainConfig,
                   out: str | Path, paper_recipe: bool = False, resume: bool = True,
                   save_steps: int | None = None, profile: str = "") -> TrlTrained:
    """Fine-tune ``base`` on one style's ``examples`` with TRL (module docstring); resume when possible.

    :func:`finelogic.runs.training.train_style` resolves a profile's set, settings and base model and calls
    this; so does ``accelerate launch -m finelogic.runs.training``.

    Args:
        examples: the style's chat examples.
        style: ``NL``, ``Symb-Struct``, ``Symb-Filter``, ``Symb-Direct`` or ``LogiPT`` (names the row).
        base: ``llama3``, ``qwen`` or a model spec (:func:`base_spec`).
        config: the training settings (seed and max_steps included).
        out: the output folder (checkpoints and the final model).
        paper_recipe: use the released recipe's SFTConfig arguments (:func:`finelogic.sft.recipes.trl_arguments`).
        resume: continue from the last ``checkpoint-<step>`` in ``out``; False starts again.
        save_steps: save a checkpoint every this many steps (None: the profile's recipe, per epoch).
        profile: recorded in ``run.json``.

    Raises:
        ImportError: TRL is not installed (names the extra).
        ValueError: ``out`` holds a run on other data or settings and ``resume`` is on.
    """
    if not trl_available():
        raise ImportError("finelogic train needs TRL: pip install -e '.[train]'")
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    import torch

    # accelerate's launcher sets these; the process group itself starts with the trainer's arguments.
    processes, main = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0")) == 0
    spec = base_spec(base)
    name = style if style == "LogiPT" else f"SFT-{style}"
    folder = Path(out)
    digest = fingerprint(spec, examples, config)
    record_path = folder / RUN_NAME
    last = last_whole_checkpoint(folder, remove_partial=main) if resume and folder.is_dir() else None
    if last and record_path.is_file():
        earlier = json.loads(record_path.read_text(encoding="utf-8"))
        if earlier.get("fingerprint") != digest:
            raise ValueError(f"{folder} holds a run on other data or settings ({earlier.get('fingerprint')} != "
                             f"{digest}); pass another --out, or --fresh to start again there")
    if main:
        folder.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps({"fingerprint": digest, "name": name, "style": style, "profile": profile,
                                           "base_model": spec.model_id, "config": _config_dict(config)}, indent=1),
                               encoding="utf-8")

    cuda = torch.cuda.is_available()
    path = model_path(spec)
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
        from peft import LoraConfig

        layers = None
        if config.lora_layers is not None:
            from transformers import AutoConfig

            n_layers = AutoConfig.from_pretrained(path).num_hidden_layers
            layers = list(range(max(0, n_layers - config.lora_layers), n_layers))
        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                                 target_modules=list(config.target_modules), layers_to_transform=layers,
                                 task_type="CAUSAL_LM")
    dataset = Dataset.from_list(as_prompt_completion(examples))
    trainer = _counting(SFTTrainer)(model=path, args=SFTConfig(**arguments, model_init_kwargs=model_kwargs),
                                    train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config)
    lengths = [len(ids) for ids in trainer.train_dataset["input_ids"]]  # the whole set, as tokenised and cut
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=last)
    seconds = time.perf_counter() - started
    tokens, targets, peak = _across_processes(trainer.counted[0], trainer.counted[1], _peak_rss_mb())

    losses = tuple(float(e["loss"]) for e in trainer.state.log_history if "loss" in e)
    accelerator = trainer.accelerator
    if config.method == "lora":
        if accelerator.is_main_process:
            accelerator.unwrap_model(trainer.model).merge_and_unload().save_pretrained(folder, safe_serialization=True)
    else:
        trainer.save_model(str(folder))  # gathers ZeRO-3 shards (zero3_save_16bit_model)
    if accelerator.is_main_process:
        tokenizer.save_pretrained(folder)
        with (folder / "train.jsonl").open("w", encoding="utf-8") as handle:
            for example in examples:
                handle.write(json.dumps(dict(example), ensure_ascii=False) + "\n")
        record = {"name": name, "base_model": spec.model_id, "config": _config_dict(config), "trainer": "trl",
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
    """The last ``checkpoint-<step>`` in ``folder`` that was saved whole, or None.

    The trainer writes a checkpoint's files in place and its ``trainer_state.json`` last, so a process
    killed while saving leaves a folder whose state is missing, empty or cut; resuming from it fails
    ("Expecting value"). Such a folder is passed over with a warning naming it (and, with
    ``remove_partial``, deleted: the trainer saves that step again), and the one before it is resumed.
    """
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
    """``trainer_class`` counting the tokens of the batches it trains on (attention mask) and their target
    tokens (labels after the first position), in this process, since this run started (a resumed run
    counts its own steps only). Counted in ``compute_loss``, not in the collator: the data loader
    collates a batch ahead."""

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


def _peak_rss_mb() -> float:
    """This process's peak resident memory (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _across_processes(tokens: int, targets: int, peak: float) -> tuple[int, int, float]:
    """Tokens and target tokens summed over processes; peak memory summed too (the machine's total)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return tokens, targets, peak
    values = torch.tensor([float(tokens), float(targets), peak], dtype=torch.float64)
    dist.all_reduce(values)
    return int(values[0]), int(values[1]), float(values[2])
