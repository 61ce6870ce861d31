"""Generated test sets kept in the one store (:mod:`finelogic.store`'s ``datasets`` table), so a rerun reads
them instead of generating them again; a row that does not read back whole is named and generated again."""
from __future__ import annotations

import hashlib
import json
import logging
from typing import Any, Callable

from finelogic.config import store_path
from finelogic.data.generate import generate
from finelogic.data.problem import Problem
from finelogic.memo import source_version
from finelogic.store import open_store

log = logging.getLogger(__name__)

#: Keyword arguments that change how generation looks, not what it makes: left out of the key.
NOT_IN_KEY = ("progress",)
#: The stored rows' layout; bump it when it changes.
FORMAT = 1


def stored_key(name: str, n: int | None, seed: Any, kwargs: dict[str, Any]) -> str:
    """sha256 of everything that determines the problems, the generators' sources included (so a change to
    their code makes new rows), like :func:`finelogic.models.cache.request_key`."""
    request = {"format": FORMAT, "version": source_version("finelogic.data.generate"), "name": name, "n": n,
               "seed": seed, "kwargs": {k: v for k, v in kwargs.items() if k not in NOT_IN_KEY}}
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_plain)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def kept_problems(name: str, key: str, make: Callable[[], list[Problem]]) -> list[Problem]:
    """The problems stored under ``key`` (``name``: what they are, for messages and the ``datasets`` table's
    ``name``): read from the store, else made by ``make()`` and stored (test and fine-tuning sets alike)."""
    store = open_store(store_path())
    records = store.get_dataset(key)
    if records is not None:
        try:
            problems = [Problem.from_dict(r) for r in records]
            log.info("%s: %d problems read from %s", name, len(problems), store.path)
            return problems
        except (ValueError, TypeError, KeyError) as error:  # rows of another version: make them again
            store.drop_dataset(key, f"{name}: a problem does not read ({type(error).__name__}: {error})")
    problems = make()
    store.put_dataset(key, name, [p.to_json() for p in problems])
    return problems


def generate_stored(name: str, n: int | None = None, seed: Any = 0, **kwargs: Any) -> list[Problem]:
    """:func:`finelogic.data.generate.generate`'s problems, read from the store, else generated and stored."""
    return kept_problems(name, stored_key(name, n, seed, kwargs), lambda: generate(name, n=n, seed=seed, **kwargs))


def _plain(value: Any) -> Any:
    """Sets in keyword arguments as sorted JSON lists, anything else JSON cannot write as its ``str``."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)
