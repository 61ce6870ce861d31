"""Where things live: the cache, the results, the real data. Environment variables override defaults."""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any, Iterator


def cache_dir() -> Path:
    """``$FINELOGIC_CACHE`` or ``~/.cache/finelogic``; created on first use."""
    path = Path(os.environ.get("FINELOGIC_CACHE", Path.home() / ".cache" / "finelogic")).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_path() -> Path:
    """The one store of model calls and memos, ``$FINELOGIC_CACHE/store.sqlite`` (:mod:`finelogic.store`)."""
    return cache_dir() / "store.sqlite"


def data_dir() -> Path | None:
    """``$FINELOGIC_DATA_DIR`` when set (the real benchmark files), else None."""
    value = os.environ.get("FINELOGIC_DATA_DIR")
    return Path(value).expanduser() if value else None


def repo_root() -> Path:
    """The repository root when running from a checkout (notebooks/, book/ beside the package)."""
    return Path(__file__).resolve().parent.parent


def results_dir(profile: str) -> Path:
    """``$FINELOGIC_RESULTS`` or ``<repo>/results``, then ``/<profile>``; created on first use."""
    base = Path(os.environ.get("FINELOGIC_RESULTS", repo_root() / "results")).expanduser()
    path = base / profile
    path.mkdir(parents=True, exist_ok=True)
    return path


def safe_name(text: str) -> str:
    """A file-name stem made from any text (a model name, a run name): characters other than letters,
    digits, ``.``, ``_``, ``-`` become ``_``, and no leading dot, so ``meta-llama/Llama-3.1-8B`` gives
    ``meta-llama_Llama-3.1-8B`` and ``../x`` can never leave its folder. The one slug function."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_").lstrip("._")
    if not name:
        raise ValueError(f"{text!r} has no characters usable in a file name")
    return name


@contextlib.contextmanager
def environment(**values: Any) -> Iterator[None]:
    """Set environment variables (as strings) while the block runs, then restore each to what it was
    (unset if it was unset), also when the block raises."""
    previous = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items()})
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
