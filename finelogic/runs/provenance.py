"""How a run's tables were made: :class:`Provenance` (written in every ``run.json``; the book's captions are
written from it), the checkout's commit (:func:`git_commit`), and :class:`Recording`, which every family's
``run()`` starts first and asks for its provenance last.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import finelogic
from finelogic.config import repo_root, scrub_secrets
from finelogic.typed_config import as_data


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The checkout's :func:`commit_of`, once per process."""
    return commit_of(repo_root())


def commit_of(checkout: Path) -> str:
    """Short commit of the git checkout, ``+dirty`` when a tracked file outside ``results/`` changed (results
    are what runs write, not what they are made with); ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=checkout, capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":(top)",
                                ":(top,exclude)results"], cwd=checkout, capture_output=True, text=True, check=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


@dataclass(frozen=True)
class Provenance:
    """How a run's tables were made (the book's captions are written from this): ``settings`` the profile
    section after overrides, ``models`` display names in table order (``model_ids`` their cache identities),
    ``n`` items evaluated (the family says what an item is), ``data`` dataset -> where its items came from (a
    path, ``generated (...)``, ``not present``), ``templates`` model -> how its prompts reached it where the family
    prompts models (``chat``: its chat template; ``completion``: plain text, for a model without one),
    ``model_calls`` / ``cache_hits`` this run's, ``seconds`` wall time."""

    family: str
    profile: str
    seed: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    model_ids: tuple[str, ...] = ()
    n: int = 0
    data: Mapping[str, str] = field(default_factory=dict)
    templates: Mapping[str, str] = field(default_factory=dict)
    model_calls: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    version: str = finelogic.__version__
    commit: str = field(default_factory=git_commit)

    def __post_init__(self) -> None:
        # Typed config is recorded as the plain data it is made of (read back the same way), with any
        # server extra_body as its digest and URL credentials as *** (config.scrub_secrets).
        object.__setattr__(self, "settings", scrub_secrets(as_data(self.settings)))

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self), default=_jsonable))

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "Provenance":
        kwargs = {f.name: value[f.name] for f in fields(cls) if f.name in value}
        for name in ("models", "model_ids"):
            kwargs[name] = tuple(kwargs.get(name, ()))
        return cls(**kwargs)


def call_counts(backends: Iterable[Any]) -> tuple[int, int]:
    """(model calls, cache hits) summed over backends that keep :class:`~finelogic.models.base.BackendStats`."""
    stats = [getattr(backend, "stats", None) for backend in backends]
    return sum(getattr(s, "calls", 0) for s in stats), sum(getattr(s, "cache_hits", 0) for s in stats)


class Recording:
    """A family's run while it is made: started (its clock running) when the run starts; :meth:`provenance`
    at the end says how its tables were made."""

    def __init__(self, family: str, profile: str, seed: int) -> None:
        self.family, self.profile, self.seed = family, profile, seed
        self.start = time.perf_counter()

    def provenance(self, settings: Any, *, opened: Sequence[tuple[Any, Any]] = (), backends: Iterable[Any] = (),
                   before: tuple[int, int] = (0, 0), **recorded: Any) -> Provenance:
        """The run's :class:`Provenance`: ``settings`` (its profile's config after overrides), the seconds since
        it started, and the model calls and cache hits of the backends of ``opened`` and of ``backends``, less
        ``before`` (what they had made before the run). ``opened``: the ``(spec, backend)`` pairs it used, in
        table order, which give ``models`` and ``model_ids``; ``recorded``: the other fields (``n``, ``data``;
        ``models`` and ``model_ids`` when its models are not opened here)."""
        calls, hits = call_counts([*(backend for _, backend in opened), *backends])
        if opened:
            recorded = {"models": tuple(spec.name for spec, _ in opened),
                        "model_ids": tuple(spec.model_id for spec, _ in opened), **recorded}
        recorded = {"model_calls": calls - before[0], "cache_hits": hits - before[1], **recorded}
        return Provenance(self.family, self.profile, self.seed, settings=settings,
                          seconds=round(time.perf_counter() - self.start, 3), **recorded)


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, (set, frozenset, tuple, range)) else str(value)
