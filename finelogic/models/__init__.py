"""Model backends with the same three verbs: ``generate``, ``loglikelihood``, ``hidden_states``.

``HFBackend`` runs a transformers model in process (default: the embedded SmolLM2-135M-Instruct,
see ``load_default``); ``LlamaCppBackend`` runs a GGUF file in process through llama.cpp (no hidden
states); ``OpenAIBackend`` talks to any OpenAI-compatible server with an on-disk cache.
Heavy imports (torch, transformers, openai) happen on first use of the name that needs them.
"""
from __future__ import annotations

import importlib

from finelogic.models.base import Backend, BackendStats, GenerationConfig, split_whitespace, truncate_at_stop

_LAZY = {
    "HFBackend": "finelogic.models.hf",
    "LlamaCppBackend": "finelogic.models.llama_cpp",
    "OpenAIBackend": "finelogic.models.openai_backend",
    "RequestFailed": "finelogic.models.openai_backend",
    "LogprobAlignmentError": "finelogic.models.openai_backend",
    "CachedBackend": "finelogic.models.cache",
    "EmbeddedModelMissing": "finelogic.models.embedded",
    "gguf_path": "finelogic.models.embedded",
    "load_default": "finelogic.models.embedded",
    "random_init_like": "finelogic.models.embedded",
}

__all__ = ["Backend", "BackendStats", "GenerationConfig", "split_whitespace", "truncate_at_stop", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'finelogic.models' has no attribute {name!r}")
