"""Results of pure, deterministic computations kept on disk, so a rerun reads them instead of redoing them.

A paper-size rerun with every model answer cached still spends minutes on work that is not a model call:
the symbolic judge's verdicts on ~90,000 steps, the baselines' solver calls, the probing problems' z3
checks, the supervision styles' line checks. Each is a pure function of its inputs and of the package's
code, so its result can be kept like a model answer. A :class:`Memo` is that store for one kind of result:

* one append-only JSONL file ``$FINELOGIC_CACHE/memo/<name>-<version>.jsonl`` (data, never pickle), a line
  ``{"key": ..., "value": ...}`` per result;
* the ``version`` is part of the file name: a digest of the sources the computation runs
  (:func:`source_version`), so a change to that code starts a new file and an old result is never read
  again (delete ``memo/`` to reclaim the space);
* ``memo[key] = value`` buffers; :meth:`Memo.flush` appends the buffer in one ``write`` under a lock on the
  file (several processes may share a memo: a key written twice is read once), and runs every
  :data:`FLUSH_EVERY` new results and when the ``with`` block ends, so a crash loses
  at most the last few; a torn last line is skipped with a warning naming the file.

Evaluation code takes any mapping (``memo.get(key)`` / ``memo[key] = value``; a plain ``dict`` in tests)
and never opens files: the run that calls it opens the :class:`Memo`. Keys are strings; :func:`memo_key`
makes one from any JSON-able value. Values must be JSON-able.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from finelogic.config import cache_dir, safe_name
from finelogic.files import exclusive_lock

log = logging.getLogger(__name__)

#: New results buffered before they are appended to the file.
FLUSH_EVERY = 2000
_PACKAGE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def source_version(*roots: str) -> str:
    """sha256 of the package sources under ``roots`` (paths relative to the package, files or folders):
    each ``.py`` file's relative path and bytes, sorted. Any edit to them gives a new version."""
    digest = hashlib.sha256()
    paths = [_PACKAGE / r for r in roots]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"source_version: no such package source {', '.join(missing)}")
    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    for path in files:
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def memo_key(value: Any) -> str:
    """sha256 of the canonical JSON of ``value`` (keys sorted; tuples as lists)."""
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Memo:
    """A persistent ``key -> JSON value`` map for one kind of result, tied to a code version.

    Args:
        name: what is kept, e.g. ``"symbolic-verdicts"`` (becomes part of the file name).
        version: what the results depend on besides the key, e.g. ``source_version("eval", "logic")``.
        folder: where the file lives; default ``$FINELOGIC_CACHE/memo``.
    """

    def __init__(self, name: str, version: str, folder: str | os.PathLike | None = None) -> None:
        folder = Path(folder) if folder is not None else cache_dir() / "memo"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{safe_name(name)}-{version[:16]}.jsonl"
        self._entries: dict[str, Any] = {}
        self._pending: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self._read()

    def _read(self) -> None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        lines = [line for line in raw.split(b"\n") if line.strip()]
        try:  # the usual case, every line whole: one parse for the file
            records = json.loads(b"[" + b",".join(lines) + b"]")
            for record in records:
                self._entries.setdefault(record["key"], record["value"])
            return
        except (ValueError, KeyError, TypeError):
            pass
        position = 0
        for line in raw.split(b"\n"):
            if line.strip():
                try:
                    record = json.loads(line)
                    self._entries.setdefault(record["key"], record["value"])
                except (ValueError, KeyError, TypeError):
                    log.warning("memo %s: skipping an unreadable line at byte %d (torn by a crash?)", self.path,
                                position)
            position += len(line) + 1

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str, default: Any = None) -> Any:
        """The kept value of ``key``, else ``default``."""
        if key in self._entries:
            self.hits += 1
            return self._entries[key]
        return default

    def __getitem__(self, key: str) -> Any:
        if key not in self._entries:
            raise KeyError(key)
        self.hits += 1
        return self._entries[key]

    def __setitem__(self, key: str, value: Any) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = value
            self._pending[key] = value
            full = len(self._pending) >= FLUSH_EVERY
        if full:
            self.flush()

    def flush(self) -> None:
        """Append the buffered results to the file: one ``write`` under the file's lock."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        text = "".join(json.dumps({"key": k, "value": v}, ensure_ascii=False) + "\n" for k, v in pending.items())
        with exclusive_lock(self.path.with_name(self.path.name + ".lock")):
            with self.path.open("ab") as handle:
                if handle.tell() and not _ends_with_newline(self.path):
                    text = "\n" + text  # close off a torn line left by a crash
                handle.write(text.encode("utf-8"))

    def __enter__(self) -> "Memo":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.flush()

    def __repr__(self) -> str:
        return f"Memo({self.path}, {len(self._entries)} results)"


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
