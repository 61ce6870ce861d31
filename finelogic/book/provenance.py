"""How each page was made (``book/design.md``, "Who it is for"): the page's one :func:`provenance_box`
(notebook, profile, seed, models, n, version, commit, date), short :func:`caption` lines (only what differs
from the box), and the :func:`rerun_box` with the command and the page's time as measured by the runner.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from IPython.display import Markdown

import finelogic
from finelogic.config import book_output_dir
from finelogic.runs.provenance import Provenance, git_commit

#: CSS classes of the two boxes (the browser test counts them).
PROVENANCE_CLASS = "finelogic-provenance"
RERUN_CLASS = "finelogic-rerun"
RERUN_TAG = "rerun-box"  # the cell whose output the runner rewrites with this run's measured time


def code(text: Any) -> str:
    """``text`` as a Markdown code span nothing inside can break out of (the fence one backtick longer than
    the longest run inside), so a model name such as ``x`<img onerror=...>`` is shown, never rendered."""
    text = " ".join(str(text).split("\n"))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def caption(notebook: str, profile: str, seed: int, *, model: str | None = None, n: int | None = None,
            **parameters: Any) -> str:
    """A short caption line for one table or figure: its model, n and parameters as safe code spans; the rest
    is in the page's :func:`provenance_box` (``notebook``, ``profile``, ``seed`` are accepted so every call
    site names them)."""
    parts = []
    if model is not None:
        parts.append(f"model {code(model)}")
    if n is not None:
        parts.append(f"n = {int(n)}")
    parts.extend(f"{k} = {code(v)}" for k, v in sorted(parameters.items()))
    return ("; ".join(parts) + ".") if parts else ""


def admonition(title: str, css_class: str, body: str, kind: str = "note") -> Markdown:
    # A colon fence of four colons: a body with ``` code blocks cannot close it.
    return Markdown(f"::::{{admonition}} {title}\n:class: {kind} {css_class}\n\n{body}\n::::\n")


def provenance_box(notebook: str, provenance: Provenance | None = None, *, profile: str | None = None,
                   seed: int | None = None, models: Sequence[str] = (), n: int | None = None,
                   **parameters: Any) -> Markdown:
    """The page's one provenance box for ``notebook`` (``02_accuracy.ipynb``): profile, seed, models, n, the
    data each test set came from, version and commit from ``provenance``, the keywords overriding it (teaching
    pages have no run), ``parameters`` as code spans."""
    profile = profile if profile is not None else getattr(provenance, "profile", "?")
    seed = seed if seed is not None else getattr(provenance, "seed", 0)
    models = tuple(models) or tuple(getattr(provenance, "models", ()))
    n = n if n is not None else getattr(provenance, "n", None)
    rows = [("notebook", code(notebook)), ("profile", code(profile)), ("seed", str(int(seed)))]
    if models:
        rows.append(("models" if len(models) > 1 else "model", ", ".join(code(m) for m in models)))
    if n is not None:
        rows.append(("n", f"{int(n)} (items this run evaluated)"))
    rows.extend((k, code(v)) for k, v in sorted(parameters.items()))
    data = getattr(provenance, "data", None) or {}  # real files, published copies, generated stand-ins
    if data:
        rows.append(("data", "; ".join(f"{name}: {code(source)}" for name, source in data.items())))
    rows.extend([("finelogic", code(getattr(provenance, "version", finelogic.__version__))),
                 ("commit", code(getattr(provenance, "commit", None) or git_commit())),
                 ("built", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))])
    body = ("Every table and figure on this page was made by this run; their captions name only what "
            "differs (a table's own n or model).\n\n" + "\n".join(f"- **{k}**: {v}" for k, v in rows))
    return admonition("How this page was made", PROVENANCE_CLASS, body)


def _duration(seconds: float) -> str:
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def read_timings(folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """The runner's ``timings.json`` in ``folder`` (default: the book's output folder); empty when it is
    absent or unreadable (nothing measured)."""
    try:
        return json.loads(((folder or book_output_dir()) / "timings.json").read_text())
    except (OSError, ValueError):
        return {}


#: How the boxes' items with the page's measured time and the build's date begin (handouts leave them out).
TIME_ITEM = "- **time**: "
BUILT_ITEM = "- **built**: "


def rerun_text(notebook: str, profile: str, *, seconds: float | None = None,
               timings: dict[str, dict[str, Any]] | None = None) -> str:
    """The body of :func:`rerun_box` as MyST Markdown; ``timings`` default: :func:`read_timings`."""
    name = Path(notebook).stem
    command = f".venv/bin/finelogic run --profile {profile} --notebook {name}"
    if seconds is not None:
        timing = f"**{_duration(seconds)}** at profile {code(profile)}, measured by the runner when this page was built."
    else:
        entry = (read_timings() if timings is None else timings).get(name)
        if entry and entry.get("profile") == profile:
            timing = (f"**{_duration(entry['seconds'])}** at profile {code(profile)} "
                      "(the last measured build, from the build's `timings.json`).")
        else:
            timing = f"not measured yet at profile {code(profile)}."
    return (f"```bash\n{command}\n```\n\n"
            f"- **profile**: {code(profile)} (the profiles: `smoke`, the smallest run, a check that everything "
            "works; `tiny`, the default, a CPU-sized run; `paper`, the paper's scale, needs GPUs or an API)\n"
            f"{TIME_ITEM}{timing}\n\n"
            "Run it from the repository root, then `make html` (or `jupyter-book build .`) to render the page; "
            "{doc}`/book/reproduce` says more.")


def rerun_box(notebook: str, profile: str, *, seconds: float | None = None) -> Markdown:
    """The "Rerun this page" box: the command, the profile and the page's measured time, never typed by hand:
    ``seconds`` (the runner rewrites the box with this run's time), else this notebook's entry in the build's
    ``timings.json`` at the same profile, else "not measured yet"."""
    return admonition("Rerun this page", RERUN_CLASS, rerun_text(notebook, profile, seconds=seconds), kind="tip")
