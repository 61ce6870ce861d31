"""A family's run reading another family's written run: :func:`find_run` finds it by its key (profile, seed,
settings, data) or raises :class:`UpstreamMissing` naming the command that makes it (:func:`make_command`).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping, TypeVar

from finelogic.config import results_dir
from finelogic.runs.provenance import Provenance
from finelogic.runs.results import BrokenRun, Run

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Run)


class UpstreamMissing(LookupError):
    """A run needs another family's run and none was made with the same key; the message names the folder,
    what differs, and the command that makes it."""


def make_command(family: str, profile: str) -> str:
    """The command that makes ``family``'s run for ``profile`` (and renders its page)."""
    return f"finelogic run --profile {profile} --family {family}"


def differing_config(wanted: Mapping[str, Any], made: Provenance,
                       defaults: Mapping[str, Any] | None = None) -> list[str]:
    """The top-level settings whose recorded value in ``made`` differs from ``wanted``, sorted; with
    ``defaults``, a setting ``made`` does not record counts as its default."""
    defaults = defaults or {}
    recorded = {k: made.settings[k] if k in made.settings else defaults.get(k) for k in set(wanted) | set(made.settings)}
    return sorted(k for k in recorded if wanted.get(k) != recorded[k])


def find_run(run_type: type[R], family: str, profile: str, seed: int, settings: Mapping[str, Any] | None = None, *,
             data: Mapping[str, str] | None = None, directory: str | Path | None = None) -> R:
    """The written run of ``family`` whose key is (``profile``, ``seed``, ``settings`` (None: any), ``data``
    when given), from ``results/<profile>/<family>`` or ``directory``; :class:`UpstreamMissing` otherwise."""
    directory = Path(directory) if directory is not None else results_dir(profile) / family
    again = f"make it with `{make_command(family, profile)}`" + (f" (seed {seed})" if seed else "")
    try:
        written = run_type.read(directory)
    except FileNotFoundError:
        raise UpstreamMissing(f"no {family} run in {directory}; {again}") from None
    except BrokenRun as error:
        raise BrokenRun(error.path, error.fault, again) from None
    made = written.provenance
    wanted = (dict(made.settings) if settings is None
              else Provenance(family, profile, seed, settings=settings).as_dict()["settings"])
    differs = [name for name, ours, theirs in (("profile", profile, made.profile), ("seed", seed, made.seed),
                                                ("settings", wanted, dict(made.settings)))
               if ours != theirs]
    if not differs and data is not None and dict(made.data) != dict(data):
        differs.append("data")
    if differs:
        detail = ", ".join(differs)
        if "settings" in differs:
            detail += f" ({', '.join(differing_config(wanted, made))})"
        raise UpstreamMissing(f"the {family} run in {directory} was made with another {detail}; {again}, "
                              "or pass the same settings")
    log.info("reading the %s run in %s", family, directory)
    return written
