"""Where things live: the cache, the results, the real data. Environment variables override defaults."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$FINELOGIC_CACHE`` or ``~/.cache/finelogic``; created on first use."""
    path = Path(os.environ.get("FINELOGIC_CACHE", Path.home() / ".cache" / "finelogic")).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


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
