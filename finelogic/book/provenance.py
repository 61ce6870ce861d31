"""Provenance captions: every table and figure says how it was made (DESIGN.md, 'Readers')."""
from __future__ import annotations

from typing import Any

import finelogic
from finelogic.runs.base import git_commit


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
