"""Generated test sets kept in the one store, so a rerun reads them instead of generating them again.

The paper's FLD test design (1,100 problems) takes about a minute to generate on one CPU core, and every
family that reads the test sets (datasets, accuracy, depth, soundness, supervision's evaluation) used to
generate it again. :func:`generate_stored` is :func:`finelogic.data.generate.generate` with a store: the
problems are written once as a row of the store's ``datasets`` table (:mod:`finelogic.store`: their
:meth:`~finelogic.data.problem.Problem.to_json` lines with their count and sha256, in one transaction) and
read back by every later call with the same arguments. A row whose text was edited or cut (its sha256 or
count differs) or whose problems do not read is named in a warning and generated again.

A set is keyed by the sha256 of the canonical JSON of everything that determines the problems, like the
model cache's keys (:func:`finelogic.models.cache.request_key`): the generator's name, ``n``, ``seed``, its
keyword arguments, and the **generator version**, a digest of the source files generation runs
(``data/generate.py``, ``data/problem.py``, ``data/generators/``, ``logic/``). Any change to the generator's
code therefore makes a new row; an old one is never read again (``DELETE FROM datasets`` reclaims it).

Sets an earlier version kept as files (``$FINELOGIC_CACHE/datasets/<name>-<key>.jsonl``,
:func:`stored_path`) are imported into the store when first asked for, then not read again.
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Callable

from finelogic.config import STORE_FILE, cache_dir, safe_name, store_path
from finelogic.data.generate import generate
from finelogic.data.problem import Problem
from finelogic.files import write_text_atomic
from finelogic.memo import source_version
from finelogic.store import open_store

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
    """``$FINELOGIC_CACHE/datasets``: where earlier versions kept the stored sets as files (imported when
    asked for); the store itself lies beside it."""
    return cache_dir() / "datasets"


def copy_stored(source: Path, target: Path) -> int:
    """Copy the stored sets of the cache whose ``datasets`` folder is ``source`` into the cache whose
    ``datasets`` folder is ``target`` (e.g. into a rehearsal's own cache, so it does not generate what the
    user's cache already holds): the rows of the store beside ``source`` that the store beside ``target``
    lacks, and the files of an earlier version; returns how many sets were copied. The source store is only
    read, never created."""
    copied = 0
    for path in sorted(source.glob("*.jsonl")) if source.is_dir() else ():
        if not (target / path.name).is_file():
            write_text_atomic(target / path.name, path.read_text("utf-8"))
            copied += 1
    mine, theirs = source.parent / STORE_FILE, target.parent / STORE_FILE
    if mine.is_file() and mine.resolve() != theirs.resolve():
        copied += open_store(mine).copy_datasets(open_store(theirs))
    return copied


def stored_path(name: str, n: int | None = None, seed: Any = 0, **kwargs: Any) -> Path:
    """Where an earlier version kept these arguments' problems as a file (imported when first asked for)."""
    return stored_folder() / f"{safe_name(name)}-{stored_key(name, n, seed, kwargs)[:24]}.jsonl"


def kept_problems(name: str, key: str, make: Callable[[], list[Problem]], legacy: Path | None = None) -> list[Problem]:
    """The problems stored under ``key`` (``name``: what they are, for messages and the ``datasets`` table's
    ``name``): read from the store, else imported from an earlier version's file ``legacy``, else made by
    ``make()``, and stored. Shared by the test sets and the fine-tuning sets (:mod:`finelogic.sft.datasets`)."""
    store = open_store(store_path())
    records = store.get_dataset(key)
    if records is not None:
        try:
            problems = [Problem.from_dict(r) for r in records]
            log.info("%s: %d problems read from %s", name, len(problems), store.path)
            return problems
        except (ValueError, TypeError, KeyError) as error:  # rows of another version: make them again
            store.drop_dataset(key, f"{name}: a problem does not read ({type(error).__name__}: {error})")
    problems = _imported(name, legacy) if legacy is not None and legacy.is_file() else None
    if problems is None:
        problems = make()
    store.put_dataset(key, name, [p.to_json() for p in problems])
    return problems


def _imported(name: str, path: Path) -> list[Problem] | None:
    """The problems of an earlier version's file, or None (with a warning naming it) when it does not read."""
    try:
        problems = [Problem.from_dict(json.loads(line)) for line in path.read_text("utf-8").splitlines()]
    except (ValueError, TypeError, KeyError) as error:  # a file from elsewhere: make them again
        log.warning("%s: unreadable stored problems in %s (%s); generating them again", name, path, error)
        return None
    log.info("%s: %d problems imported from %s into the store", name, len(problems), path)
    return problems


def generate_stored(name: str, n: int | None = None, seed: Any = 0, **kwargs: Any) -> list[Problem]:
    """:func:`finelogic.data.generate.generate`'s problems, read from the store when there, else generated
    and stored (same arguments, same result)."""
    return kept_problems(name, stored_key(name, n, seed, kwargs), lambda: generate(name, n=n, seed=seed, **kwargs),
                         legacy=stored_path(name, n, seed, **kwargs))


def _plain(value: Any) -> Any:
    """Tuples and sets in keyword arguments, as JSON lists (sets sorted)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)
