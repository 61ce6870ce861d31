"""Generated test sets kept on disk, so a rerun reads them instead of generating them again.

The paper's FLD test design (1,100 problems) takes about a minute to generate on one CPU core, and every
family that reads the test sets (datasets, accuracy, depth, soundness, supervision's evaluation) used to
generate it again. :func:`generate_stored` is :func:`finelogic.data.generate.generate` with a store:
the problems are written once as JSONL under ``$FINELOGIC_CACHE/datasets/`` (one
:meth:`~finelogic.data.problem.Problem.to_json` line each, written atomically: a reader never sees half a
file) and read back by every later call with the same arguments.

A file is named by the sha256 of the canonical JSON of everything that determines the problems, like the
model cache's keys (:func:`finelogic.models.cache.request_key`): the generator's name, ``n``, ``seed``, its
keyword arguments, and the **generator version**, a digest of the source files generation runs
(``data/generate.py``, ``data/problem.py``, ``data/generators/``, ``logic/``). Any change to the generator's
code therefore makes a new file; an old one is never read again (delete ``datasets/`` to reclaim it).
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from finelogic.config import cache_dir, safe_name
from finelogic.data.generate import generate
from finelogic.data.problem import Problem
from finelogic.files import write_text_atomic
from finelogic.memo import source_version

log = logging.getLogger(__name__)

#: Keyword arguments that change how generation looks, not what it makes: left out of the key.
NOT_IN_KEY = ("progress",)
#: The stored file's layout; bump it when it changes.
FORMAT = 1


def generator_version() -> str:
    """sha256 of the sources generation runs (:func:`finelogic.memo.source_version` of them)."""
    return source_version("data/generate.py", "data/problem.py", "data/generators", "logic")


def stored_key(name: str, n: int | None, seed: Any, kwargs: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the generator version, format, name, n, seed and kwargs."""
    request = {"format": FORMAT, "version": generator_version(), "name": name, "n": n, "seed": seed,
               "kwargs": {k: v for k, v in kwargs.items() if k not in NOT_IN_KEY}}
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_plain)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def stored_folder() -> Path:
    """``$FINELOGIC_CACHE/datasets``: where the stored test sets live."""
    return cache_dir() / "datasets"


def copy_stored(source: Path, target: Path) -> int:
    """Copy the stored sets of folder ``source`` missing from folder ``target`` (e.g. into a rehearsal's own
    cache, so it does not generate what the user's cache already holds); returns how many were copied."""
    copied = 0
    for path in sorted(source.glob("*.jsonl")) if source.is_dir() else ():
        if not (target / path.name).is_file():
            write_text_atomic(target / path.name, path.read_text("utf-8"))
            copied += 1
    return copied


def stored_path(name: str, n: int | None = None, seed: Any = 0, **kwargs: Any) -> Path:
    """Where :func:`generate_stored` keeps these arguments' problems."""
    return stored_folder() / f"{safe_name(name)}-{stored_key(name, n, seed, kwargs)[:24]}.jsonl"


def generate_stored(name: str, n: int | None = None, seed: Any = 0, **kwargs: Any) -> list[Problem]:
    """:func:`finelogic.data.generate.generate`'s problems, read from the store when there, else generated
    and stored (same arguments, same result)."""
    path = stored_path(name, n, seed, **kwargs)
    if path.is_file():
        try:
            problems = [Problem.from_dict(json.loads(line)) for line in path.read_text("utf-8").splitlines()]
            log.info("%s: %d problems read from %s", name, len(problems), path)
            return problems
        except (ValueError, TypeError, KeyError) as error:  # a file from elsewhere: make it again
            log.warning("%s: unreadable stored problems in %s (%s); generating them again", name, path, error)
    problems = generate(name, n=n, seed=seed, **kwargs)
    write_text_atomic(path, "".join(p.to_json() + "\n" for p in problems))
    return problems


def _plain(value: Any) -> Any:
    """Tuples and sets in keyword arguments, as JSON lists (sets sorted)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)
