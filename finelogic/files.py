"""Writing result files so that a reader never sees half of one: a temporary file or folder, then a rename."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the file ``path`` (created if missing) while the block runs."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place: of two writers the last
    one wins, and no reader ever sees a mix or a torn end."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                     delete=False) as handle:
        handle.write(data)
    os.replace(handle.name, path)
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """``text`` as UTF-8, written atomically (:func:`write_bytes_atomic`)."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(value: Any, path: str | os.PathLike) -> Path:
    """``value`` as indented, key-sorted JSON, written atomically."""
    return write_text_atomic(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n")


def replace_folder(staging: Path, directory: Path) -> None:
    """Rename the folder ``staging`` to ``directory``, replacing an old one whole (a reader sees the old set of
    files or the new one, never a mix); writers of one folder take turns on an exclusive ``flock`` of the
    parent, so two finishing together leave the last one's set."""
    handle = os.open(directory.parent, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if not directory.exists():
            os.replace(staging, directory)
            return
        old = Path(tempfile.mkdtemp(prefix=f".{directory.name}-old-", dir=directory.parent))
        os.replace(directory, old / directory.name)
        try:
            os.replace(staging, directory)
        except BaseException:
            os.replace(old / directory.name, directory)
            raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        os.close(handle)
