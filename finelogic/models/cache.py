"""An append-only JSONL cache of model responses, keyed by a hash of the request.

Why JSONL: it is data (``json`` only, never pickle), a crash can at worst tear the last line,
and appending one line per finished request makes a killed run resumable: a restart finds every
finished answer on disk and sends no request for it.

Each line is ``{"key": sha256, "request": {...}, "response": {...}}``. The request is stored for
auditing; it never contains credentials (the API key is not part of a request).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def request_key(request: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of everything that determines the answer."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Responses by request key, loaded from and appended to one JSONL file.

    One process writes a file at a time (threads of that process may share it). Unreadable lines
    (a torn last line after a crash) are skipped with a warning; the next append starts on a new
    line so the torn bytes never merge with a good record.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._entries: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._needs_newline = False
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        raw = self.path.read_bytes()
        self._needs_newline = bool(raw) and not raw.endswith(b"\n")
        lines = raw.split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                self._entries.setdefault(record["key"], record["response"])
            except (ValueError, KeyError, TypeError):
                where = "its last line (torn by a crash?)" if number >= len(lines) - 1 else f"line {number}"
                log.warning("response cache %s: skipping unreadable %s", self.path, where)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> Any | None:
        return self._entries.get(key)

    def put(self, key: str, request: dict[str, Any], response: Any) -> None:
        """Store a response unless the key is already cached (never writes duplicates)."""
        line = json.dumps({"key": key, "request": request, "response": response}, ensure_ascii=False) + "\n"
        with self._lock:
            if key in self._entries:
                return
            data = ("\n" if self._needs_newline else "") + line
            # One write() on an O_APPEND descriptor: a kill leaves whole lines or one torn last line.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data.encode("utf-8"))
            finally:
                os.close(fd)
            self._needs_newline = False
            self._entries[key] = response
