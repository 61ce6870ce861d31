"""Model backends with the same verbs (:class:`finelogic.models.base.Backend`), opened by
:func:`finelogic.models.spec.open_model`; heavy imports (torch, transformers, openai, llama.cpp) happen on
first use of the name that needs them."""
from __future__ import annotations

import importlib

from finelogic.models.base import Backend, BackendStats, GenerationConfig, split_whitespace, truncate_at_stop

_LAZY = {
    "HFBackend": "finelogic.models.hf",
    "LlamaCppBackend": "finelogic.models.llama_cpp",
    "gemma3_270m_path": "finelogic.models.llama_cpp",
    "OpenAIBackend": "finelogic.models.openai_backend",
    "RequestFailed": "finelogic.models.openai_backend",
    "LogprobAlignmentError": "finelogic.models.openai_backend",
    "CachedBackend": "finelogic.models.cache",
    "EmbeddedModelMissing": "finelogic.models.embedded",
    "converted_path": "finelogic.models.embedded",
    "gguf_path": "finelogic.models.embedded",
    "load_default": "finelogic.models.embedded",
    "random_init_like": "finelogic.models.embedded",
}

__all__ = ["Backend", "BackendStats", "GenerationConfig", "split_whitespace", "truncate_at_stop", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'finelogic.models' has no attribute {name!r}")
