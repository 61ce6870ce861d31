"""Naming a model in a notebook parameter, and opening the backend for it.

A model is a plain string or dict, so notebooks and the ``finelogic run -p`` command can pass it:

- ``"embedded"``: the embedded SmolLM2-135M-Instruct, in process;
- ``"hf:<name or path>"``: any transformers causal LM, in process (GPU with ``device_map="auto"``);
- ``"openai:<model>"`` or ``"openai:<model>@<base_url>"``: any OpenAI-compatible server (OpenAI,
  DeepSeek, a vLLM or llama.cpp server); the API key is read from ``$OPENAI_API_KEY``, or from the
  variable a dict spec names in ``api_key_env``.

A dict gives the same fields explicitly plus a display ``name``:
``{"name": "GPT-4o", "kind": "openai", "model": "gpt-4o"}``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from finelogic.config import cache_dir

EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_ID = "embedded:SmolLM2-135M-Instruct.Q4_1->float32"


@dataclass(frozen=True)
class ModelSpec:
    """Which model, through which backend.

    Attributes:
        name: the row label in tables.
        kind: ``"hf"`` (in process) or ``"openai"`` (a server).
        path: hub name or local path for ``hf``; None = the embedded model.
        model: the server's model name for ``openai``.
        base_url: the server (None = OpenAI's).
        api_key_env: the environment variable holding the API key (never the key itself).
        device_map: ``"auto"`` on GPUs for ``hf``.
    """

    name: str
    kind: str
    path: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    device_map: str | None = None

    @property
    def model_id(self) -> str:
        """What identifies this model's answers in caches."""
        if self.kind == "hf":
            return self.path or EMBEDDED_ID
        return f"{self.base_url or 'openai'}::{self.model}"


def parse_model(spec: str | Mapping[str, Any] | ModelSpec) -> ModelSpec:
    """A :class:`ModelSpec` from a string or dict (see the module docstring); clear errors otherwise."""
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, Mapping):
        fields = dict(spec)
        kind = fields.get("kind")
        if kind not in ("hf", "openai"):
            raise ValueError(f"model spec {spec!r}: 'kind' must be 'hf' or 'openai'")
        if kind == "openai" and not fields.get("model"):
            raise ValueError(f"model spec {spec!r}: an openai model needs 'model'")
        fields.setdefault("name", fields.get("model") or _short(fields.get("path")) or EMBEDDED_NAME)
        return ModelSpec(**fields)
    text = str(spec).strip()
    if text == "embedded":
        return ModelSpec(EMBEDDED_NAME, "hf")
    kind, sep, rest = text.partition(":")
    if not sep or not rest or kind not in ("hf", "openai"):
        raise ValueError(f"model spec {text!r}: expected 'embedded', 'hf:<name or path>' or "
                         "'openai:<model>[@<base_url>]'")
    if kind == "hf":
        return ModelSpec(_short(rest), "hf", path=rest)
    model, _, base_url = rest.partition("@")
    return ModelSpec(model, "openai", model=model, base_url=base_url or None)


def _short(path: str | None) -> str | None:
    return path.rstrip("/").split("/")[-1] if path else None


def open_backend(spec: str | Mapping[str, Any] | ModelSpec, *, cache: bool = True, batch_size: int = 16,
                 **backend_kwargs: Any):
    """The backend for ``spec``; in-process models are wrapped in an on-disk response cache under
    ``cache_dir()/responses/`` (the OpenAI backend keeps its own cache there)."""
    spec = parse_model(spec)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.model_id)
    if spec.kind == "openai":
        from finelogic.models.openai_backend import OpenAIBackend

        cache_path = cache_dir() / "responses" / f"openai-{safe}.jsonl" if cache else False
        return OpenAIBackend(spec.model, spec.base_url, api_key_env=spec.api_key_env, cache_path=cache_path,
                             **backend_kwargs)
    from finelogic.models.hf import HFBackend

    backend = HFBackend(spec.path, batch_size=batch_size, device_map=spec.device_map, **backend_kwargs)
    if not cache:
        return backend
    from finelogic.models.cached import CachedBackend

    return CachedBackend(backend, cache_dir() / "responses" / f"hf-{safe}.jsonl", spec.model_id)


