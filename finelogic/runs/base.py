"""What every notebook family's run shares besides its result files (:mod:`finelogic.runs.results`), its
provenance (:mod:`finelogic.runs.provenance`), its models (:mod:`finelogic.runs.backends`) and its upstream
runs (:mod:`finelogic.runs.upstream`): :func:`resolve` (the profile's settings, once) and the judging memos.

Every family's ``run(profile, *, seed=0, backends=None, **overrides)`` takes ``backends``, ready backends by
model entry or display name, used as they are (the other models are opened with
:func:`~finelogic.models.spec.open_model`); ``overrides``, settings of its profile section (None keeps the
profile's); and for each upstream family a ``<family>_run`` (None: :func:`~finelogic.runs.upstream.find_run`
of the profile and seed).
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, TypeVar

from finelogic.memo import Memo, source_version
from finelogic.profiles import get_profile
from finelogic.settings import merge

S = TypeVar("S")


def resolve(profiles: Mapping[str, S], profile: str, family: str, overrides: Mapping[str, Any]) -> S:
    """A family's settings in ``profile`` with ``overrides`` merged field by field (None keeps the profile's);
    the errors of :func:`~finelogic.profiles.get_profile` and :func:`finelogic.settings.merge`."""
    get_profile(profile)
    if profile not in profiles:
        raise ValueError(f"the {profile!r} profile has no {family} settings (it has {', '.join(profiles)})")
    return merge(profiles[profile], overrides, family)


@contextlib.contextmanager
def judging_memos() -> Iterator[tuple[Memo, Memo]]:
    """The symbolic judge's verdicts and each response's steps as read, kept across runs (the soundness run,
    the supervision run's judged FLD responses: what one judged the other reads back); flushed at the end."""
    with Memo("symbolic-verdicts", source_version("finelogic.eval.judges")) as verdicts, \
            Memo("soundness-steps", source_version("finelogic.eval.soundness")) as read:
        yield verdicts, read


@dataclass(frozen=True)
class PlanContext:
    """What the rehearsal (:mod:`finelogic.rehearsal`) tells a family's ``rehearsal_plan(ctx)`` about the
    models standing in for the profile's: ``serve(entry)`` a spec reached over HTTP, ``local(entry, index)``
    one read in process, ``trainable(entry)`` the one fine-tuning starts from; ``train`` over the profile's;
    ``fraction`` the real slice's share of every set (None: the stand-in rehearsal at full size) and
    ``max_new_tokens`` its cap; ``given`` the caller's overrides; ``served_by`` for the report's notes."""

    profile: str
    serve: Any
    local: Any
    trainable: Any
    served_by: str = "stand-in server"
    train: Mapping[str, Any] = field(default_factory=dict)
    fraction: float | None = None
    max_new_tokens: int | None = None
    given: Mapping[str, Any] = field(default_factory=dict)

    def sliced(self, n: int) -> int:
        """A slice's share of ``n`` items, ``ceil(fraction x n)`` and at least 1 (``n`` itself outside a slice)."""
        return n if self.fraction is None else max(1, math.ceil(self.fraction * n))

    def capped(self, asked: int | None) -> str:
        """The report's words for the slice's cap on new tokens against the profile's (``asked``)."""
        return f"new tokens capped at {self.max_new_tokens}" + (f" (the profile: {asked:,})" if asked else "")


def plan(overrides: Mapping[str, Any] | None = None, backends: Mapping[str, Any] | None = None,
         note: str = "") -> dict[str, Any]:
    """A family's rehearsal or slice plan: the ``run`` overrides, ready backends, and the report's note."""
    return {"overrides": dict(overrides or {}), "backends": dict(backends or {}), "note": note}


def entry_name(entry: Any) -> str:
    """The display name of a profile's model entry (a spec dict's ``name``, else its model or path)."""
    if isinstance(entry, Mapping):
        return str(entry.get("name") or entry.get("model") or entry.get("path"))
    return {"embedded": "SmolLM2-135M-Instruct", "random-init": "SmolLM2-135M (random init)"}.get(str(entry), str(entry))
