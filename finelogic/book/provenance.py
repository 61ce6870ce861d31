"""Provenance captions: every table and figure says how it was made (DESIGN.md, 'Readers')."""
from __future__ import annotations

import re
from typing import Any

import finelogic
from finelogic.runs.base import git_commit


def code(text: Any) -> str:
    """``text`` as a Markdown code span that nothing inside can break out of (CommonMark: the fence is one
    backtick longer than the longest backtick run inside), so a model name such as ``x`<img onerror=...>``
    is shown as text, never rendered."""
    text = " ".join(str(text).split("\n"))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def caption(notebook: str, profile: str, seed: int, *, model: str | None = None, n: int | None = None,
            **parameters: Any) -> str:
    """One caption line: notebook, profile, parameters, model, n, seed, package version, commit; every value
    that a user or a model can choose is a safe code span (:func:`code`)."""
    parts = [f"notebook {code(notebook)}", f"profile {code(profile)}"]
    if model is not None:
        parts.append(f"model {code(model)}")
    if n is not None:
        parts.append(f"n = {int(n)}")
    parts.extend(f"{k} = {code(v)}" for k, v in sorted(parameters.items()))
    parts.extend([f"seed {int(seed)}", f"finelogic {finelogic.__version__}", f"commit {code(git_commit())}"])
    return "Made by " + ", ".join(parts) + "."
