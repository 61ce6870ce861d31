"""Results of pure, deterministic computations kept on disk, so a rerun reads them instead of redoing them
(the symbolic judge's verdicts, the baselines' solver calls, the probing problems' z3 checks, the style checks).

A :class:`Memo` keeps them as JSON rows of the store's ``memos`` table (:mod:`finelogic.store`) under a
``version`` that digests the code they come from (:func:`source_version`), so a change to that code starts
afresh. Evaluation code takes any mapping (a plain ``dict`` in tests) and never opens files: the run opens
the :class:`Memo`. Keys are strings (:func:`memo_key` makes one from any JSON-able value).
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable

from finelogic.config import STORE_FILE, store_path
from finelogic.store import open_store

log = logging.getLogger(__name__)

#: New results buffered before they are written to the store in one transaction.
FLUSH_EVERY = 2000
_PACKAGE = Path(__file__).resolve().parent


def _module_file(name: str) -> Path | None:
    """The source file of package module ``name`` (``finelogic.a.b``), or None if there is none."""
    parts = name.split(".")[1:]
    for path in (_PACKAGE.joinpath(*parts).with_suffix(".py"), _PACKAGE.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, at the top or inside functions (``from finelogic.a import b``
    names module ``finelogic.a.b`` where there is one, else ``finelogic.a``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == _PACKAGE.name:
            found |= {f"{node.module}.{a.name}" if _module_file(f"{node.module}.{a.name}") else node.module
                      for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == _PACKAGE.name}
    return found


@functools.lru_cache(maxsize=None)
def source_version(*modules: str) -> str:
    """sha256 of the sources (relative path and bytes) of ``modules`` (``"finelogic.eval.judges"``) and of every
    package module they import, directly or not: no list of what a computation depends on is kept by hand."""
    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            raise FileNotFoundError(f"source_version: no package module {name!r}")
        seen[name] = path
        todo += _imports(path)
    digest = hashlib.sha256()
    for path in sorted(set(seen.values())):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def memo_key(value: Any) -> str:
    """sha256 of the canonical JSON of ``value`` (keys sorted; tuples as lists)."""
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Memo:
    """A persistent ``key -> JSON value`` map for one kind of result (``name``) at one code ``version``, kept
    in ``folder``'s ``store.sqlite`` (default ``$FINELOGIC_CACHE``). ``check(value)`` says what is wrong with a
    stored value (None: nothing), as the store checks model answers: a bad one is named in a warning (the store
    file, the memo, the key), deleted and computed again. ``memo[key] = value`` buffers (a key set twice keeps
    its first value); :meth:`flush` writes the buffer in one transaction, every :data:`FLUSH_EVERY` results and
    when the ``with`` block ends."""

    def __init__(self, name: str, version: str, folder: str | os.PathLike | None = None, *,
                 check: Callable[[Any], str | None] | None = None) -> None:
        self.store = open_store(Path(folder) / STORE_FILE if folder is not None else store_path())
        self.name, self.version = name, version
        self.path = self.store.path
        self._entries: dict[str, Any] = self.store.memo_items(name, version, check)
        self._pending: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str, default: Any = None) -> Any:
        """The kept value of ``key``, else ``default``."""
        return self[key] if key in self._entries else default

    def __getitem__(self, key: str) -> Any:
        if key not in self._entries:
            raise KeyError(key)
        self.hits += 1
        return self._entries[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"memo {self.name}: keys are strings (memo_key makes one), not {type(key).__name__}")
        json.dumps(value)  # not JSON-able: refused here, naming the caller's line, not at the flush
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = value
            self._pending[key] = value
            full = len(self._pending) >= FLUSH_EVERY
        if full:
            self.flush()

    def flush(self) -> None:
        """Write the buffered results to the store in one transaction."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if pending:
            self.store.put_memos(self.name, self.version, pending)

    def __enter__(self) -> "Memo":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.flush()

    def __repr__(self) -> str:
        return f"Memo({self.name!r} in {self.path}, {len(self._entries)} results)"
