"""What every notebook family's run shares besides its result files (:mod:`finelogic.runs.results`), its
provenance (:mod:`finelogic.runs.provenance`), its models (:mod:`finelogic.runs.backends`) and its upstream
runs (:mod:`finelogic.runs.upstream`): :func:`resolve` (the profile's settings, once) and the judging memos.

Every family's ``run(profile, *, seed=0, backends=None, **overrides)`` takes ``backends``, ready backends by
model entry or display name, used as they are (the other models are opened with
:func:`~finelogic.models.spec.open_model`); ``overrides``, changes to its profile's config (None keeps the
profile's); and for each upstream family a ``<family>_run`` (None: :func:`~finelogic.runs.upstream.find_run`
of the profile and seed).
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Mapping, TypeVar

from finelogic.memo import Memo, source_version
from finelogic.profiles import get_profile
from finelogic.typed_config import merge

S = TypeVar("S")


def resolve(profiles: Mapping[str, S], profile: str, family: str, overrides: Mapping[str, Any]) -> S:
    """A family's config in ``profile`` with ``overrides`` merged field by field (None keeps the profile's);
    the errors of :func:`~finelogic.profiles.get_profile` and :func:`finelogic.typed_config.merge`."""
    get_profile(profile)
    if profile not in profiles:
        raise ValueError(f"the {profile!r} profile has no {family} settings (it has {', '.join(profiles)})")
    return merge(profiles[profile], overrides, family)


@contextlib.contextmanager
def judging_memos() -> Iterator[tuple[Memo, Memo]]:
    """The symbolic judge's verdicts and each response's steps as read, kept across soundness runs (what one
    judged the next reads back); flushed at the end."""
    from finelogic.eval.judges import verdict_problem
    from finelogic.eval.soundness import steps_problem

    with Memo("symbolic-verdicts", source_version("finelogic.eval.judges"), check=verdict_problem) as verdicts, \
            Memo("soundness-steps", source_version("finelogic.eval.soundness"), check=steps_problem) as read:
        yield verdicts, read


