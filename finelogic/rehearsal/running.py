"""Running one family in a rehearsal (stand-ins or the real slice) with :func:`run_family`, measured stage by
stage; the upstream runs a family reads are those made earlier in the same rehearsal, never another folder's.
"""
from __future__ import annotations

import logging
import os
import resource
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from finelogic.config import STORE_FILE, store_path
from finelogic.data.stored import copy_stored
from finelogic.runs.base import PlanContext, Run
from finelogic.runs.registry import Family

log = logging.getLogger(__name__)

PROFILE = "paper"
REPORT_COLUMNS = ("family", "stage", "status", "wall_s", "peak_rss_mb", "requests", "prompt_tokens", "cap_tokens",
                  "judge_calls", "cache_calls", "cache_hits", "cache_bytes", "result_bytes", "files", "load_avg", "note")


def report_row(family: str, stage: str, status: str = "ok") -> dict[str, Any]:
    """An empty report row (every count 0) for ``family``'s ``stage``."""
    return {c: 0 for c in REPORT_COLUMNS} | {"family": family, "stage": stage, "status": status, "note": ""}


def served_spec(entry: Any, name: str, model: str, url: str, options: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-backend model ``name`` serving ``model`` at ``url``; the profile ``entry``'s ``scorer`` is kept."""
    spec = {"name": name, "kind": "openai", "model": model, "base_url": url, "options": options}
    if isinstance(entry, Mapping) and "scorer" in entry:
        spec["scorer"] = entry["scorer"]
    return spec


def prepare(root: Path, fresh: bool) -> None:
    """Empty ``root``'s cache and results when ``fresh``; copy the user's stored test sets into its cache (they
    are not model output: no need to generate them again)."""
    if fresh:
        for sub in ("cache", PROFILE):
            shutil.rmtree(root / sub, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    copy_stored(store_path(), root / "cache" / STORE_FILE)


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_family(family: Family, ctx: PlanContext, seed: int, data_dir: Any, root: Path, made: dict[str, Run],
               stages: tuple[str, str] = ("run", "write")) -> tuple[list[dict[str, Any]], str | None]:
    """Run and write one family with its ``rehearsal_plan(ctx)``, ``ctx.given`` over it; one report row per
    stage, with the plan's note. Its run is added to ``made`` (by family name) for the families downstream;
    a crash is recorded and returned, and the rehearsal goes on."""
    plan = family.rehearsal_plan(ctx)
    kwargs = {**plan["overrides"], **ctx.given}
    if family.reads_data and data_dir is not None:
        kwargs["data_dir"] = data_dir
    kwargs |= {f"{name}_run": made[name] for name in family.upstream if name in made}
    rows: list[dict[str, Any]] = []
    error, run = None, None
    cache_before = folder_bytes(root / "cache")
    with stage(family.name, stages[0], rows):
        try:
            run = family.run(PROFILE, seed=seed, backends=dict(plan["backends"]) or None, **kwargs)
        except Exception as exc:  # the rehearsal's job is to find these: record and go on
            error = f"{type(exc).__name__}: {exc}"[:500]
            log.exception("rehearsal: %s failed", family.name)
    calls, hits = (run.provenance.model_calls, run.provenance.cache_hits) if run is not None else (0, 0)
    rows[0].update(status="ok" if error is None else f"error: {error}", cache_calls=calls, cache_hits=hits,
                   cache_bytes=folder_bytes(root / "cache") - cache_before)
    if run is not None:
        made[family.name] = run
        with stage(family.name, stages[1], rows):
            paths = run.write(root / PROFILE / family.name)
        rows[1].update(status="ok", files=len(paths), result_bytes=sum(p.stat().st_size for p in paths))
    for row in rows:
        row["note"] = plan["note"]
    return rows, error


@contextmanager
def stage(family: str, name: str, rows: list[dict[str, Any]]) -> Iterator[None]:
    """A report row for ``family``'s stage ``name``: wall time, peak memory, load (appended to ``rows``)."""
    try:  # reset the peak resident memory (Linux), so that each stage has its own
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    start = time.perf_counter()
    row = report_row(family, name)
    rows.append(row)
    try:
        yield
    finally:
        row.update(wall_s=round(time.perf_counter() - start, 1), peak_rss_mb=round(_peak_mb()), load_avg=load_avg())
        log.info("rehearsal: %s %s: %.1f s, peak %d MB", family, name, row["wall_s"], row["peak_rss_mb"])


def _peak_mb() -> float:
    """Peak resident memory since the last reset (VmHWM), else since the process started."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0
