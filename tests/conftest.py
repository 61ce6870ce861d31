"""Test-wide settings: offline, headless, and caches that never touch the user's home directory."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# Set before any test imports transformers / datasets / matplotlib.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# The converted embedded model is cached per checkout, so the slow GGUF conversion happens once.
os.environ.setdefault("FINELOGIC_CACHE", str(REPO / ".cache" / "test"))


@pytest.fixture
def shared_data() -> Path:
    """The real benchmark files beside the repository (never copied into it)."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"real data not present at {path}")
    return path


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path_factory, monkeypatch):
    """Results written during tests go to a temporary folder, never into the checkout."""
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path_factory.getbasetemp() / "results"))
