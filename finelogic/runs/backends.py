"""The models a family's run uses: :func:`open_models` (ready backends handed in, the others opened by
:func:`~finelogic.models.spec.open_model`), :func:`release` after each, :func:`set_threads` for torch, and
:func:`parse_model_list` for a notebook parameter naming models.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from finelogic.models.spec import ModelSpec, open_model, parse_model


def release(backend: Any) -> None:
    """Let go of ``backend``'s loaded model when it can open it again (``CachedBackend.release``)."""
    if callable(getattr(type(backend), "release", None)):
        backend.release()


def open_models(entries: Sequence[Any], backends: Mapping[str, Any] | None = None, *,
                batch_size: int = 16) -> list[tuple[ModelSpec, Any]]:
    """``(spec, backend)`` per model entry, in order: a handed-in backend where ``backends`` has one for the
    entry or its display name, used as it is (not cached: a test counts its calls), else
    :func:`finelogic.models.spec.open_model`."""
    backends = dict(backends or {})
    opened = []
    for entry in entries:
        key = entry if isinstance(entry, str) else (entry.get("name") if isinstance(entry, Mapping) else None)
        try:
            spec = parse_model(entry)
        except ValueError:
            if key not in backends:
                raise
            spec = ModelSpec(key, "given")  # a test's own name for a scripted backend
        name = key if key in backends else spec.name
        backend = backends.pop(name) if name in backends else open_model(spec, batch_size=batch_size)
        opened.append((spec, backend))
    if backends:
        raise ValueError(f"backends given for {', '.join(map(repr, backends))}, which the run does not use; "
                         f"its models are {', '.join(map(repr, entries))}")
    return opened


def set_threads(threads: int | None) -> None:
    """torch's CPU thread count for an in-process run (None or 0: torch's default)."""
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def parse_model_list(value: str | Sequence[str] | None) -> list[str]:
    """A notebook parameter naming models: a list, or one comma-separated string (``-p
    extra_models=gpt2,/data/ckpt``)."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(item).strip() for item in items if str(item).strip()]

