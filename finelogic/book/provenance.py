"""Provenance captions: every table and figure says how it was made (DESIGN.md, 'Readers')."""
from __future__ import annotations

import functools
import subprocess
from typing import Any

import finelogic
from finelogic.config import repo_root


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """Short commit of the checkout, ``+dirty`` when tracked files changed; ``unknown`` outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"], cwd=repo_root(), capture_output=True, text=True,
            check=True, timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo_root(), capture_output=True,
            text=True, check=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def caption(notebook: str, profile: str, seed: int, *, model: str | None = None, n: int | None = None,
            **parameters: Any) -> str:
    """One caption line: notebook, profile, parameters, model, n, seed, package version, commit."""
    parts = [f"notebook `{notebook}`", f"profile `{profile}`"]
    if model is not None:
        parts.append(f"model `{model}`")
    if n is not None:
        parts.append(f"n = {n}")
    parts.extend(f"{k} = {v}" for k, v in sorted(parameters.items()))
    parts.extend([f"seed {seed}", f"finelogic {finelogic.__version__}", f"commit `{git_commit()}`"])
    return "Made by " + ", ".join(parts) + "."
