"""The real slice of a rehearsal (``book/rehearsal.md``, "The real slice"): the first ``ceil(fraction x n)``
items of every family against llama.cpp's server with the embedded SmolLM2-135M-Instruct, through the
OpenAI backend, capped at :data:`MAX_NEW_TOKENS` new tokens: it checks the code path, its accuracies are not
results. Probing and LogicMark read the embedded model in process (hidden states and echoed log-probs).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from finelogic.config import environment
from finelogic.rehearsal.running import PROFILE, prepare, run_family, served_spec
from finelogic.runs import registry
from finelogic.runs.base import PlanContext, entry_name
from finelogic.runs.results import Run

log = logging.getLogger(__name__)

PREFIX = "real-slice:"
#: New tokens per generation in the slice (the paper profile asks for 3,072).
MAX_NEW_TOKENS = 32
#: Requests in flight at once: llama.cpp's Python server answers one at a time.
SERVER_OPTIONS = {"max_concurrency": 1, "timeout": 900, "extra_body": {"repeat_penalty": 1.0}}
#: llama.cpp's context window: SmolLM2's 8,192 tokens (the paper-layout Few-shot prompts pass 2,048).
N_CTX = 8192


def served(entry: Any, url: str, model: str) -> dict[str, Any]:
    """A profile's model entry as ``real-slice:<name>``, the llama.cpp model at ``url`` (its ``scorer`` kept)."""
    options = {k: (dict(v) if isinstance(v, dict) else v) for k, v in SERVER_OPTIONS.items()}
    return served_spec(entry, PREFIX + entry_name(entry), model, url, options)


def in_process(entry: Any, checkpoint: Path) -> dict[str, Any]:
    """A profile's in-process model entry as ``real-slice:<name>``: the embedded model's converted checkpoint."""
    return {"name": f"{PREFIX}{entry_name(entry)} (embedded, in process)", "kind": "ckpt", "path": str(checkpoint)}


def slice_context(fraction: float, url: str, model: str, *, embedded: Path, standin: Path,
                  max_new_tokens: int = MAX_NEW_TOKENS, train: Mapping[str, Any] | None = None,
                  given: Mapping[str, Any] | None = None) -> PlanContext:
    """The real slice's :class:`~finelogic.runs.base.PlanContext`: every served model the llama.cpp server's
    ``model`` at ``url``, every in-process one the ``embedded`` checkpoint, fine-tuning from the random-init
    ``standin`` (``train`` over the profile's; default 2 optimizer steps)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the real slice's fraction must be in (0, 1], got {fraction!r}")
    return PlanContext(PROFILE, serve=lambda entry: served(entry, url, model),
                       local=lambda entry, i=0: in_process(entry, embedded),
                       trainable=lambda entry: {"name": PREFIX + entry_name(entry), "kind": "ckpt", "path": str(standin)},
                       train=dict(train or {"max_steps": 2}), fraction=fraction, max_new_tokens=max_new_tokens,
                       given=dict(given or {}), served_by=f"llama.cpp server ({model})")


def rehearse_slice(families: Sequence[registry.Family], fraction: float, root: Path, *, standin: Path, seed: int = 0,
                   fresh: bool = True, data_dir: Any = None,
                   train: Mapping[str, Any] | None = None, max_new_tokens: int | None = None,
                   overrides: Mapping[str, Mapping[str, Any]] | None = None, rows: list[dict[str, Any]],
                   errors: dict[str, str], written: Callable[[], Any] = lambda: None) -> None:
    """Run ``families`` as the real slice under ``root`` against llama.cpp's server on the embedded GGUF, adding
    report rows to ``rows`` and errors to ``errors`` (``real-slice <family>``); ``written()`` after each family."""
    from finelogic.models.embedded import converted_path
    from finelogic.models.llama_server import LlamaServer

    max_new_tokens = max_new_tokens or MAX_NEW_TOKENS
    prepare(root, fresh)
    embedded = converted_path()  # in the user's cache, before the slice's cache is set: converted once
    start = time.perf_counter()
    with LlamaServer(threads=1, n_ctx=N_CTX, startup_timeout=600) as server:
        log.info("real slice: llama.cpp server up in %.0f s", time.perf_counter() - start)
        with environment(FINELOGIC_CACHE=root / "cache", FINELOGIC_RESULTS=root):
            made: dict[str, Run] = {}
            for family in families:
                ctx = slice_context(fraction, server.base_url, server.model, embedded=embedded, standin=standin,
                                    max_new_tokens=max_new_tokens, train=train,
                                    given=(overrides or {}).get(family.name, {}))
                stages = ("real-slice", "real-slice write")
                stage_rows, error = run_family(family, ctx, seed, data_dir, root, made, stages)
                if family.models == registry.SERVED:  # HTTP requests to llama.cpp (every attempt)
                    stage_rows[0]["requests"] = stage_rows[0]["cache_calls"]
                rows += stage_rows
                if error:
                    errors[f"real-slice {family.name}"] = error
                written()
