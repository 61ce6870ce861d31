"""Supervised fine-tuning on one supervision style (the paper's Section 4): LoRA adapters (peft) on a CPU for
the small profiles, full fine-tuning with the paper's recipe (:data:`PAPER_CONFIG`, the table
:mod:`finelogic.sft.recipes` shares with TRL) in the ``paper`` profile. TRL (:mod:`finelogic.sft.trl_train`)
serves the paper scale; on a CPU it is well below this loop's speed (``benchmarks/bench_trl_vs_loop.py``).

A run is written to ``cache_dir()/sft/<run>-<hash>/`` (the hash covers base model, data and configuration, so
an unchanged run is loaded, not retrained) through a temporary folder renamed at the end: a transformers
checkpoint (LoRA merged), its tokenizer, ``train_log.json`` and the data as JSONL; ``open_model(trained.spec)``
opens it. Every ``save_every`` steps a resume state is written atomically to ``<checkpoint>.resume/state.pt``;
a rerun with the same fingerprint continues from it to the losses and weights of an uninterrupted run.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.config import cache_dir, safe_name
from finelogic.models.base import chat_token_ids
from finelogic.models.spec import ModelSpec, parse_model
from finelogic.sft.recipes import train_config_fields
from finelogic.typed_config import RECORDED_WHEN_SET, as_data

# torch is imported inside the functions that train: the book's pages import this module only for its
# settings and records, and importing torch would cost each page seconds.

log = logging.getLogger(__name__)

IGNORE_INDEX = -100
#: Optimizer steps whose examples are sorted by length together (``TrainConfig.group_by_length``).
GROUP_STEPS = 16
LOG_NAME = "train_log.json"
#: Optimizer steps between two resume states (:func:`train`'s ``save_every``).
SAVE_EVERY = 16
RESUME_SUFFIX = ".resume"
# The attention and MLP projections of Llama-style models (SmolLM2, Llama, Qwen all name them so).
LLAMA_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class TrainConfig:
    """How to fine-tune. ``method``: ``"lora"`` (adapters on ``target_modules``, merged into the weights when
    saved) or ``"full"`` (the paper's choice). AdamW at peak ``learning_rate``, no weight decay, ``scheduler``
    ``"cosine"`` (after a ``warmup_ratio`` linear warm-up) or ``"constant"``; ``max_steps`` (optimizer steps)
    caps ``epochs`` when set. ``batch_size`` examples per optimizer step, gradients accumulated over
    ``micro_batch_size`` (memory, not maths); examples cut to ``cutoff_len`` tokens, prompt + target.
    ``lora_layers``: adapt only the top blocks (None: all); gradients then stop at the lowest adapted block,
    which makes a CPU step several times cheaper. ``seed``: example order, dropout, LoRA initialisation.
    ``dtype``: the weights' (``"bfloat16"`` on GPUs). ``autocast="bfloat16"``: float32 weights, the forward
    pass's matrix products in bfloat16 (faster only on CPUs with bfloat16 instructions:
    ``benchmarks/bench_sft_autocast.py``); recorded only when set. ``group_by_length``: :func:`step_order`."""

    method: str = "lora"
    learning_rate: float = 1e-3
    epochs: float = 1.0
    max_steps: int | None = None
    batch_size: int = 8
    micro_batch_size: int = 4
    cutoff_len: int = 1024
    scheduler: str = "cosine"
    warmup_ratio: float = 0.05
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    target_modules: tuple[str, ...] = LLAMA_PROJECTIONS
    lora_layers: int | None = None
    seed: int = 0
    dtype: str = "float32"
    group_by_length: bool = True
    autocast: str = field(default="off", metadata=RECORDED_WHEN_SET)

    def __post_init__(self) -> None:
        if self.method not in ("lora", "full"):
            raise ValueError(f"TrainConfig.method must be 'lora' or 'full', got {self.method!r}")
        if self.scheduler not in ("cosine", "constant"):
            raise ValueError(f"TrainConfig.scheduler must be 'cosine' or 'constant', got {self.scheduler!r}")
        if self.batch_size < 1 or self.micro_batch_size < 1:
            raise ValueError("TrainConfig.batch_size and micro_batch_size must be >= 1")
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError(f"TrainConfig.dtype must be float32, bfloat16 or float16, got {self.dtype!r}")
        if self.autocast not in ("off", "bfloat16"):
            raise ValueError(f"TrainConfig.autocast must be 'off' or 'bfloat16', got {self.autocast!r}")
        if self.autocast != "off" and self.dtype != "float32":
            raise ValueError(f"TrainConfig.autocast={self.autocast!r} needs float32 weights (dtype={self.dtype!r} "
                             "already computes in its own type)")


#: The paper's recipe (:data:`finelogic.sft.recipes.PAPER_RECIPE`, where each value comes from): full
#: fine-tune, lr 1e-6, 3 epochs, global batch 32, cutoff 2,500, cosine without warm-up, bf16; micro-batches
#: of 4 are this loop's memory choice, not the recipe's.
PAPER_CONFIG = TrainConfig(**train_config_fields(), micro_batch_size=4)


@dataclass(frozen=True)
class TrainedModel:
    """A fine-tuned checkpoint on disk and how it was made: ``name`` is its table row (``SFT-<style>``),
    ``losses`` the mean loss over each optimizer step's target tokens, ``tokens`` those processed (prompt +
    target), ``seconds`` the wall time of the run that trained it; ``cached``: this call loaded it."""

    name: str
    path: Path
    losses: tuple[float, ...]
    tokens: int
    target_tokens: int
    seconds: float
    config: Mapping[str, Any]
    examples: int
    cached: bool = False

    @property
    def spec(self) -> ModelSpec:
        """The checkpoint as a ``ckpt`` model named like its table row: ``open_model(trained.spec)``
        evaluates it like any model."""
        return ModelSpec(self.name, "ckpt", path=str(self.path))

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else float("nan")

    def loss_drop(self, window: int = 5) -> tuple[float, float]:
        """Mean loss of the first and of the last ``window`` steps."""
        head, tail = self.losses[:window], self.losses[-window:]
        return sum(head) / len(head), sum(tail) / len(tail)


@dataclass
class _Encoded:
    input_ids: list[int]
    labels: list[int]
    id: str = field(default="")

    @property
    def prompt_length(self) -> int:
        """Tokens before the first target token."""
        return next((i for i, label in enumerate(self.labels) if label != IGNORE_INDEX), len(self.labels))


def encode_example(tokenizer: Any, example: Mapping[str, Any], cutoff_len: int) -> _Encoded:
    """Token ids and labels of one chat example, cut to ``cutoff_len`` tokens: the prompt is the chat template
    up to the assistant header (what generation sees), the target (the only labels) the last message's text
    and end-of-turn token. ValueError (naming the id) unless the last message is the assistant's."""
    messages = example.get("messages")
    ident = str(example.get("id", "?"))
    if not messages or messages[-1].get("role") != "assistant":
        raise ValueError(f"training example {ident!r}: 'messages' must end with the assistant turn")
    prompt = chat_token_ids(tokenizer, messages[:-1])
    target = tokenizer(messages[-1]["content"] + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    ids = (prompt + list(target))[:cutoff_len]
    labels = ([IGNORE_INDEX] * len(prompt) + list(target))[:cutoff_len]
    return _Encoded(ids, labels, ident)


def fingerprint(base: ModelSpec, examples: Sequence[Mapping[str, Any]], config: TrainConfig) -> str:
    """12 hex digits identifying (base model, training data, configuration)."""
    digest = hashlib.sha256()
    digest.update(base.model_id.encode())
    digest.update(json.dumps(as_data(config), sort_keys=True).encode())
    for example in examples:
        digest.update(json.dumps(example.get("messages"), sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:12]


def train(examples: Sequence[Mapping[str, Any]], *, name: str, base_model: Any = "embedded",
          config: TrainConfig = TrainConfig(), output_root: str | Path | None = None,
          progress: bool | None = None, force: bool = False, save_every: int = SAVE_EVERY) -> TrainedModel:
    """Fine-tune ``base_model`` (``"embedded"``, ``"hf:<name or path>"`` or ``"ckpt:<dir>"``) on chat
    ``examples`` (e.g. :func:`finelogic.sft.datasets.training_set`), or load the checkpoint where it exists
    (``force``: retrain, ignoring a resume state). ``name`` is the row label (``SFT-NL``, ``LogiPT``) and names
    the folder under ``output_root`` (default ``cache_dir()/sft``). ``save_every``: optimizer steps between two
    resume states (0: none); not in the fingerprint, since it does not change what is trained."""
    if not examples:
        raise ValueError(f"{name}: no training examples")
    base = parse_model(base_model)
    if base.kind not in ("embedded", "hf", "ckpt"):
        raise ValueError(f"{name}: can only fine-tune in-process models (embedded, hf, ckpt), "
                         f"not {base.kind!r} ({base.name})")
    root = Path(output_root) if output_root is not None else cache_dir() / "sft"
    slug = safe_name(f"{base.name}-{name}")
    target = root / f"{slug}-{fingerprint(base, examples, config)}"
    if (target / LOG_NAME).is_file() and not force:
        return _load_record(target, name, cached=True)

    import torch

    from finelogic.sft.datasets import write_jsonl

    tokenizer, model = _load_base(base, config)
    encoded = [encode_example(tokenizer, ex, config.cutoff_len) for ex in examples]
    empty = [e.id for e in encoded if all(label == IGNORE_INDEX for label in e.labels)]
    if empty:
        raise ValueError(f"{name}: cutoff_len={config.cutoff_len} leaves no target tokens in {empty[:5]}")
    model = _prepare(model, config)
    resume = target.with_name(target.name + RESUME_SUFFIX)
    if force and resume.exists():
        shutil.rmtree(resume)
    losses, tokens, target_tokens, seconds = _fit(model, tokenizer, encoded, config, name,
                                                  progress=True if progress is None else progress,
                                                  resume=resume, save_every=save_every)

    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{slug}-", dir=root))
    try:
        if config.method == "lora":
            model = model.merge_and_unload()
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        write_jsonl(map(dict, examples), staging / "train.jsonl")
        record = {"name": name, "base_model": base.model_id, "config": as_data(config),
                  "examples": len(examples), "losses": losses, "tokens": tokens,
                  "target_tokens": target_tokens, "seconds": seconds, "torch_threads": torch.get_num_threads()}
        (staging / LOG_NAME).write_text(json.dumps(record, indent=1), encoding="utf-8")
        if target.exists():  # a forced retrain replaces the old checkpoint
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(resume, ignore_errors=True)  # the model is saved: its resume state is not needed any more
    log.info("%s: trained %d steps in %.0f s (%.0f tokens/s), loss %.3f -> %.3f; saved to %s", name,
             len(losses), seconds, tokens / seconds if seconds else float("nan"), losses[0], losses[-1], target)
    return _load_record(target, name, cached=False)


def _load_record(path: Path, name: str, *, cached: bool) -> TrainedModel:
    record = json.loads((path / LOG_NAME).read_text(encoding="utf-8"))
    return TrainedModel(name=name, path=path, losses=tuple(record["losses"]), tokens=record["tokens"],
                        target_tokens=record["target_tokens"], seconds=record["seconds"],
                        config=record["config"], examples=record["examples"], cached=cached)


def _load_base(base: ModelSpec, config: TrainConfig) -> tuple[Any, Any]:
    import torch
    dtype = getattr(torch, config.dtype)
    if base.path is None:
        from finelogic.models.embedded import load_default

        tokenizer, model = load_default(dtype=dtype)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(base.path)
        model = AutoModelForCausalLM.from_pretrained(base.path, dtype=dtype, device_map=base.device_map)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model


def _prepare(model: Any, config: TrainConfig) -> Any:
    import torch
    torch.manual_seed(config.seed)
    if config.method == "full":
        model.train()
        return model
    from peft import get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [m for m in config.target_modules if m not in names]
    if missing:
        raise ValueError(f"LoRA target modules {missing} are not in {type(model).__name__}; "
                         "set TrainConfig.target_modules to its projection names")
    model = get_peft_model(model, lora_config(config, model.config.num_hidden_layers))
    model.train()
    return model


def lora_config(config: TrainConfig, n_layers: int) -> Any:
    """peft's ``LoraConfig`` of ``config`` for a model of ``n_layers`` blocks (read only with ``lora_layers``)."""
    from peft import LoraConfig

    layers = None if config.lora_layers is None else list(range(max(0, n_layers - config.lora_layers), n_layers))
    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                      target_modules=list(config.target_modules), layers_to_transform=layers, task_type="CAUSAL_LM")


def _fit(model: Any, tokenizer: Any, encoded: list[_Encoded], config: TrainConfig, name: str,
         *, progress: bool, resume: Path | None = None,
         save_every: int = SAVE_EVERY) -> tuple[list[float], int, int, float]:
    """Train ``model`` in place; returns the loss per step, tokens processed, target tokens and seconds
    (those of an earlier, interrupted run included when it resumes from its state in ``resume``)."""
    import torch
    from transformers import get_constant_schedule_with_warmup, get_cosine_schedule_with_warmup

    rng = random.Random(config.seed)
    steps_per_epoch = math.ceil(len(encoded) / config.batch_size)
    total = config.max_steps or max(1, math.ceil(config.epochs * steps_per_epoch))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=0.0)
    warmup = int(config.warmup_ratio * total)
    schedule = (get_cosine_schedule_with_warmup(optimizer, warmup, total) if config.scheduler == "cosine"
                else get_constant_schedule_with_warmup(optimizer, warmup))
    device = model.get_input_embeddings().weight.device
    pad = tokenizer.pad_token_id

    order: list[list[int]] = []
    losses: list[float] = []
    tokens = target_tokens = padded = 0
    earlier = 0.0  # seconds of the interrupted run(s) this one continues
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    state = _read_resume(resume, name, len(encoded), total) if resume is not None else None
    if state is not None:
        missing = set(trainable) - set(state["weights"])
        if missing:
            raise ValueError(f"{name}: resume state {resume} lacks weights {sorted(missing)[:3]}; delete the folder "
                             "to train from the start")
        with torch.no_grad():
            for n, p in trainable.items():
                p.copy_(state["weights"][n])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        version, inner, gauss = state["python_rng"]  # torch.load may give the inner tuple back as a list
        rng.setstate((version, tuple(inner), gauss))
        torch.set_rng_state(state["torch_rng"])
        order, losses = [list(step) for step in state["order"]], list(state["losses"])
        tokens, target_tokens, padded, earlier = state["tokens"], state["target_tokens"], state["padded"], state["seconds"]
        log.info("%s: resuming at step %d of %d from %s", name, len(losses), total, resume)
    started = time.perf_counter()
    bar = tqdm(total=total, initial=len(losses), desc=f"train {name}", disable=not progress)
    for _ in range(len(losses), total):
        if not order:  # a fresh shuffled pass over the data, cut into steps
            order = step_order(encoded, config, rng)
        batch = [encoded[i] for i in order.pop()]
        n_target = sum(sum(label != IGNORE_INDEX for label in e.labels[1:]) for e in batch)
        step_loss = 0.0
        for start in range(0, len(batch), config.micro_batch_size):
            micro = batch[start:start + config.micro_batch_size]
            input_ids, labels, mask = _pad(micro, pad, device)
            padded += int(mask.numel() - mask.sum())
            # Vocabulary logits only where a target token is predicted: from the shortest prompt's end on.
            keep = input_ids.shape[1] - min(e.prompt_length for e in micro) + 1
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.autocast == "bfloat16"):
                logits = model(input_ids=input_ids, attention_mask=mask, logits_to_keep=keep).logits[:, :-1].float()
            loss_sum = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), labels[:, -keep + 1:].reshape(-1),
                ignore_index=IGNORE_INDEX, reduction="sum")
            (loss_sum / n_target).backward()  # token-weighted mean over the whole step
            step_loss += loss_sum.item()
            tokens += int(mask.sum())
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        target_tokens += n_target
        losses.append(step_loss / n_target)
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        bar.update(1)
        if resume is not None and save_every > 0 and len(losses) % save_every == 0 and len(losses) < total:
            _write_resume(resume, {
                "name": name, "examples": len(encoded), "total": total,
                "weights": {n: p.detach().clone() for n, p in trainable.items()},
                "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                "python_rng": rng.getstate(), "torch_rng": torch.get_rng_state(), "order": order,
                "losses": losses, "tokens": tokens, "target_tokens": target_tokens, "padded": padded,
                "seconds": earlier + time.perf_counter() - started})
    bar.close()
    model.eval()
    log.info("train %s: %d tokens processed, %.1f%% of them padding", name, tokens, 100 * padded / max(1, tokens + padded))
    return losses, tokens, target_tokens, earlier + time.perf_counter() - started


def _write_resume(folder: Path, state: dict[str, Any]) -> None:
    """``state`` as ``folder/state.pt``, written to a temporary file and renamed (a kill mid-write leaves
    the previous state whole)."""
    import torch
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".state.pt.{os.getpid()}"
    torch.save(state, partial)
    os.replace(partial, folder / "state.pt")


def _read_resume(folder: Path, name: str, examples: int, total: int) -> dict[str, Any] | None:
    """The resume state in ``folder``, or None; ValueError naming the file for one that cannot be read or was
    written for another number of examples or steps (damaged or edited: the folder's name is the fingerprint)."""
    import torch
    path = folder / "state.pt"
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a damaged file: pickle, zipfile and torch each say it their way
        raise ValueError(f"{name}: resume state {path} cannot be read ({type(error).__name__}: {error}); "
                         "delete it to train from the start") from None
    if (state.get("examples"), state.get("total")) != (examples, total):
        raise ValueError(f"{name}: resume state {path} was written for {state.get('examples')} examples and "
                         f"{state.get('total')} steps, not {examples} and {total}; delete it to train from the start")
    return state


def step_order(encoded: Sequence[Any], config: TrainConfig, rng: random.Random) -> list[list[int]]:
    """One pass over the examples as optimizer steps (lists of ``config.batch_size`` indices), the last step to
    take first. With ``group_by_length``, every :data:`GROUP_STEPS` steps' worth of the shuffled pass is sorted
    by length before it is cut and the steps shuffled again: little padding, no pattern in the lengths."""
    indices = list(range(len(encoded)))
    rng.shuffle(indices)
    if config.group_by_length:
        span = config.batch_size * GROUP_STEPS
        indices = [i for start in range(0, len(indices), span)
                   for i in sorted(indices[start:start + span], key=lambda i: len(encoded[i].input_ids))]
    steps = [indices[start:start + config.batch_size] for start in range(0, len(indices), config.batch_size)]
    if config.group_by_length:
        rng.shuffle(steps)
    return steps[::-1]


def _pad(batch: list[_Encoded], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, labels (padding ignored) and attention mask."""
    import torch
    width = max(len(e.input_ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, e in enumerate(batch):
        ids[row, :len(e.input_ids)] = torch.tensor(e.input_ids)
        labels[row, :len(e.labels)] = torch.tensor(e.labels)
        mask[row, :len(e.input_ids)] = 1
    return ids.to(device), labels.to(device), mask.to(device)


def with_overrides(config: TrainConfig, overrides: Mapping[str, Any] | None) -> TrainConfig:
    """``config`` with the fields a profile or notebook sets (lists become tuples)."""
    if not overrides:
        return config
    unknown = sorted(set(overrides) - set(TrainConfig.__dataclass_fields__))
    if unknown:
        raise ValueError(f"unknown TrainConfig fields {unknown}; known: {sorted(TrainConfig.__dataclass_fields__)}")
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
    return replace(config, **fields)
