"""Run the book's notebooks with papermill (``book/design.md``, "Papermill executes, Jupyter Book renders").

Every notebook takes ``profile`` and ``seed``. A notebook whose inputs (:func:`run_key`: its text, the
package sources, its parameters, :data:`KEY_ENVIRONMENT`, the real data files under
``$FINELOGIC_DATA_DIR`` and the results of its upstream families) did not change since its last successful
run is not run again, unless the results it wrote (``results/<profile>/<family>``) were deleted or no longer
match their ``run.json``; ``force=True`` reruns anyway.

A parameter is written into its notebook and page, so a server URL's credentials in one (``-p
extra_models=openai:NAME@http://user:password@host/v1``) are shown there as ``***``
(:func:`~finelogic.config.redact_url`) and reach the kernels through ``$FINELOGIC_SERVER_URLS`` instead.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import nbformat
from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.book.handouts import TEACHING, write_handouts
from finelogic.book.provenance import RERUN_TAG, read_timings, rerun_box
from finelogic.config import (SERVER_URLS_ENV, book_output_dir, credential_urls, environment, notebooks_dir,
                              redact_url, repo_root, results_dir)
from finelogic.files import write_json_atomic, write_text_atomic
from finelogic.profiles import get_profile
from finelogic.runs.results import BrokenRun, checked_files
from finelogic.runs.registry import FAMILIES, Family

log = logging.getLogger(__name__)

# The book's notebooks, in reading order: one per notebook family (the registry's), then the teaching chapters.
NOTEBOOKS = (*sorted(f.notebook for f in FAMILIES), *TEACHING)  # reading order: by their numbers
RUN_KEY = "finelogic_run_key"
#: An executed family notebook's metadata: the family whose run it wrote to ``results/<profile>/<family>``
#: (the notebook runs again when that run no longer reads back whole).
RESULTS = "finelogic_results"
#: Environment variables that choose what a notebook reads (data, models, where results are).
KEY_ENVIRONMENT = ("FINELOGIC_DATA_DIR", "FINELOGIC_RESULTS", "OPENAI_BASE_URL", "FINELOGIC_OFFLINE")
#: Environment variables that hold paths: a relative one means a path from where the command was typed, but
#: the kernels run in the notebooks' folder, so the runner makes them absolute before any notebook starts.
PATH_ENVIRONMENT = ("FINELOGIC_DATA_DIR", "FINELOGIC_CACHE", "FINELOGIC_RESULTS")
_PAPERMILL_TAGS = {"injected-parameters", "papermill-error-cell-tag"}


class NotebookFailed(RuntimeError):
    """A notebook raised: the message names the notebook, the failing cell and the error."""


@dataclass(frozen=True)
class RunRecord:
    notebook: str
    output: Path
    seconds: float
    skipped: bool
    finished: str | None = None  # UTC, minutes
    load: float | None = None  # the 1-minute load average when it finished
    jobs: int = 1  # how many notebooks the runner ran at once
    damaged: str | None = None  # why it ran although unchanged: its results did not read back


def run_key(notebook_path: Path, parameters: dict[str, Any], upstream: Sequence[Path] = ()) -> str:
    """sha256 over everything the notebook reads (see the module docstring); ``upstream``: result folders."""
    digest = hashlib.sha256()
    digest.update(notebook_path.read_bytes())
    digest.update(json.dumps(parameters, sort_keys=True).encode())
    digest.update(_folder_digest(repo_root() / "finelogic", suffixes=(".py", ".yaml", ".json")).encode())
    digest.update(json.dumps({name: os.environ.get(name) for name in KEY_ENVIRONMENT}, sort_keys=True).encode())
    data = os.environ.get("FINELOGIC_DATA_DIR")
    if data:
        digest.update(_folder_digest(Path(data).expanduser()).encode())
    for folder in upstream:
        digest.update(str(folder.name).encode() + _folder_digest(folder).encode())
    return digest.hexdigest()


def _folder_digest(folder: Path, suffixes: Sequence[str] | None = None) -> str:
    """Hash of every file's relative path and content under ``folder`` (only names ending in ``suffixes``
    when given; "absent" when it does not exist)."""
    if not folder.is_dir():
        return "absent"
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and (suffixes is None or p.suffix in suffixes)):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _failure_message(name: str, output: Path, error: Exception) -> str:
    """Name the notebook, the failing cell (number and first source line) and the error."""
    cell_info = ""
    try:
        nb = nbformat.read(output, as_version=4)
        # Number cells as in the source notebook (1-based), skipping the cells papermill adds.
        own = [c for c in nb.cells if not _PAPERMILL_TAGS & set(c.metadata.get("tags", []))]
        for number, cell in enumerate(own, start=1):
            if cell.cell_type == "code" and any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                cell_info = f" in cell {number} ({first!r})"
                break
    except Exception:
        pass
    ename = getattr(error, "ename", type(error).__name__)
    evalue = getattr(error, "evalue", str(error))
    return f"notebook {name}{cell_info} failed: {ename}: {evalue} (partial output: {output})"


def run_notebooks(
    profile: str = "tiny",
    names: Sequence[str] | None = None,
    *,
    seed: int = 0,
    output_dir: Path | None = None,
    source_dir: Path | None = None,
    parameters: dict[str, Any] | None = None,
    force: bool = False,
    jobs: int = 1,
    families: Sequence[Family] = FAMILIES,
) -> list[RunRecord]:
    """Execute notebooks with papermill for ``profile``; return one record per notebook.

    Args:
        names: notebook stems to run (default: every family's notebook, then the teaching chapters, found in
            ``source_dir``, default ``notebooks/``).
        output_dir: where executed notebooks go (default ``book/generated``).
        parameters: extra papermill parameters for every notebook (e.g. ``{"model": "..."}``).
        force: rerun even when the inputs are unchanged since the last successful run.
        jobs: notebooks run at once, each in its own process and kernel, after the notebooks it reads.

    Raises:
        NotebookFailed: the first failing notebook, naming it and its failing cell.
    """
    get_profile(profile)
    for variable in PATH_ENVIRONMENT:
        if os.environ.get(variable):
            os.environ[variable] = str(Path(os.environ[variable]).expanduser().resolve())
    source_dir = source_dir or notebooks_dir()
    output_dir = output_dir or book_output_dir()
    output_dir.mkdir(parents=True, exist_ok=True)
    if names is None:
        names = [n for n in (*(f.notebook for f in families), *TEACHING) if (source_dir / f"{n}.ipynb").exists()]
    unknown = [n for n in names if not (source_dir / f"{n}.ipynb").exists()]
    if unknown:
        raise FileNotFoundError(f"no such notebook(s) in {source_dir}: {', '.join(unknown)}")

    given = {"profile": profile, "seed": seed, **(parameters or {})}
    params = _shown(given)  # what the notebooks are given and show; the credentials go by the environment
    withheld = " ".join(dict.fromkeys([*os.environ.get(SERVER_URLS_ENV, "").split(), *credential_urls(given)]))
    # Progress bars inside executed notebooks are noise on the rendered page (the kernel inherits this).
    os.environ.setdefault("TQDM_DISABLE", "1")
    jobs = max(1, int(jobs))
    records: dict[str, RunRecord] = {}
    bar = tqdm(total=len(names), desc=f"notebooks ({profile})", unit="nb")

    def key_of(name: str) -> str:  # computed when the notebook starts: its upstream results are final then
        upstream = [results_dir(profile) / family for family in _upstream_families(name, families)]
        return run_key(source_dir / f"{name}.ipynb", params, upstream)

    damaged: dict[str, str] = {}  # notebook -> what was wrong with its results, when that is why it runs

    def finish(name: str, key: str, seconds: float) -> None:
        family = next((f.name for f in families if f.notebook == name), None)
        wrote = family if family is not None and _damage(results_dir(profile) / family) is None else None
        record = _finish(name, output_dir / f"{name}.ipynb", key, profile, seconds, jobs, wrote)
        records[name] = dataclasses.replace(record, damaged=damaged.get(name))
        bar.set_postfix_str(name)
        bar.update()

    def unchanged(name: str, key: str) -> bool:
        output = output_dir / f"{name}.ipynb"
        try:
            previous = nbformat.read(output, as_version=4).metadata if output.exists() else {}
        except Exception:  # an unreadable old output is simply rerun
            previous = {}
        if force or previous.get(RUN_KEY) != key:
            return False
        why = _damage(results_dir(profile) / previous[RESULTS]) if previous.get(RESULTS) else None
        if why:
            log.warning("%s: rerun although unchanged: its results did not read back (%s)", name, why)
            damaged[name] = why
            return False
        log.info("%s unchanged since its last run; kept %s", name, output)
        records[name] = RunRecord(name, output, 0.0, skipped=True)
        bar.update()
        return True

    # One notebook's execution, picklable for the worker processes of jobs > 1.
    execute = functools.partial(_execute, source_dir=source_dir, output_dir=output_dir, params=params,
                                withheld=withheld)
    try:
        if jobs == 1:
            for name in names:
                key = key_of(name)
                if not unchanged(name, key):
                    finish(name, key, execute(name))
        else:
            reads = {n: {f.notebook for f in families if f.name in _upstream_families(n, families)}
                     for n in names}
            _run_in_parallel(_start_order(names, output_dir, profile, families), reads, jobs, execute, key_of,
                             unchanged, finish)
    finally:
        bar.close()
        # Each notebook's seconds of its last real run, when it finished and the 1-minute load then.
        timings = read_timings(output_dir)
        for record in records.values():
            if not record.skipped:
                timings[record.notebook] = {"profile": profile, "seconds": round(record.seconds, 1),
                                            "finished": record.finished, "load": record.load, "jobs": record.jobs}
        write_json_atomic(timings, output_dir / "timings.json")
        write_text_atomic(output_dir / "timings.md", timings_table(timings))
    write_handouts(output_dir, tuple(n for n in names if n in TEACHING))
    return [records[n] for n in names]


def check_parameters(path: Path) -> list[str]:
    """The names papermill reads from ``path``'s parameters cell.

    Raises:
        NotebookFailed: papermill cannot parse a line of the cell (that parameter would vanish from the
            page and could not be set); the message names the notebook and the line.
    """
    from logging.handlers import BufferingHandler

    from papermill.inspection import inspect_notebook

    handler, logger = BufferingHandler(capacity=10**6), logging.getLogger("papermill")
    logger.addHandler(handler)
    try:
        names = list(inspect_notebook(str(path)))
    finally:
        logger.removeHandler(handler)
    bad = [r.getMessage() for r in handler.buffer if "Unable to parse" in r.getMessage()]
    if bad:
        raise NotebookFailed(f"notebook {path.stem}: its parameters cell has a line papermill cannot read "
                             f"({bad[0]}); write one assignment per line with no '=' in its comment")
    return names


def _shown(value: Any) -> Any:
    """A notebook parameter as its notebook is given it: every string's URL credentials as ``***``."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    return value


def _execute(name: str, *, source_dir: Path, output_dir: Path, params: dict[str, Any], withheld: str = "") -> float:
    """Execute one notebook with papermill, its kernel given ``withheld`` as ``$FINELOGIC_SERVER_URLS``; its
    wall seconds (module-level: a worker process runs it)."""
    import papermill  # imported here: papermill is slow to import and only the runner needs it

    source, output = source_dir / f"{name}.ipynb", output_dir / f"{name}.ipynb"
    check_parameters(source)
    start = time.perf_counter()
    try:
        with environment(**({SERVER_URLS_ENV: withheld} if withheld else {})):
            papermill.execute_notebook(
                str(source), str(output), parameters=params, kernel_name="python3",
                cwd=str(source_dir), progress_bar=False, log_output=False,
            )
    except Exception as error:  # papermill raises PapermillExecutionError; keep its cell info
        raise NotebookFailed(_failure_message(name, output, error)) from error
    return time.perf_counter() - start


def _worker_environment(values: dict[str, str]) -> None:
    """A worker process's environment, inherited by the kernels it starts (unset names only)."""
    for name, value in values.items():
        os.environ.setdefault(name, value)


def _finish(name: str, output: Path, key: str, profile: str, seconds: float, jobs: int,
            wrote: str | None = None) -> RunRecord:
    """Stamp an executed notebook with its run key, the family whose run it wrote (``wrote``) and measured time
    (also in the "Rerun this page" box, the cells tagged :data:`~finelogic.book.provenance.RERUN_TAG`); show
    one parameters cell, behind a toggle: papermill's injected one (the values this run used), not the
    notebook's defaults. Returns its record."""
    nb = nbformat.read(output, as_version=4)
    nb.metadata[RUN_KEY] = key
    nb.metadata[RESULTS] = wrote
    nb.metadata["finelogic_seconds"] = round(seconds, 2)
    box = rerun_box(name, profile, seconds=round(seconds, 1))
    tags_of = [set(cell.metadata.get("tags", [])) for cell in nb.cells]
    injected = any("injected-parameters" in tags for tags in tags_of)
    for cell, tags in zip(nb.cells, tags_of):
        if cell.cell_type == "code" and RERUN_TAG in tags:
            cell.outputs = [nbformat.v4.new_output("display_data", data={
                "text/markdown": box.data, "text/plain": "Rerun this page"})]
        if injected and "parameters" in tags:
            cell.metadata["tags"] = sorted(tags | {"remove-cell"})
        elif injected and "injected-parameters" in tags:
            cell.metadata["tags"] = sorted(tags | {"hide-input"})
    nbformat.write(nb, output)
    return RunRecord(name, output, seconds, skipped=False, finished=time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                     load=round(os.getloadavg()[0], 2), jobs=jobs)


def _damage(directory: Path) -> str | None:
    """What is wrong with the run written to ``directory`` (deleted, or a file that does not match its
    ``run.json``, named), None when it reads back whole."""
    try:
        checked_files(directory)
    except FileNotFoundError:
        return f"{directory}: missing (no run.json)"
    except BrokenRun as error:
        return f"{error.path}: {error.fault}"
    return None


def _upstream_families(name: str, families: Sequence[Family]) -> tuple[str, ...]:
    """The families whose results the notebook ``name`` reads (none for a teaching chapter)."""
    return next((f.upstream for f in families if f.notebook == name), ())


def _start_order(names: Sequence[str], output_dir: Path, profile: str, families: Sequence[Family]) -> list[str]:
    """Longest first: by this profile's last measured times when known, else by the registry's tiny-book minutes."""
    measured = {n: float(t["seconds"]) for n, t in read_timings(output_dir).items() if t.get("profile") == profile}
    if all(n in measured for n in names):
        return sorted(names, key=lambda n: -measured[n])
    minutes = {f.notebook: f.minutes for f in families}
    return sorted(names, key=lambda n: -minutes.get(n, 0.0))


def _run_in_parallel(order: Sequence[str], reads: dict[str, set[str]], jobs: int, execute: Callable[[str], float],
                     key_of: Callable[[str], str], unchanged: Callable[[str, str], bool],
                     finish: Callable[[str, str, float], None]) -> None:
    """Run the notebooks of ``order`` (started in that order) up to ``jobs`` at once in worker processes, each
    after those of them it ``reads``; PyTorch gets ``cores // jobs`` threads unless ``OMP_NUM_THREADS`` is set.
    The first failure stops new starts and is raised once the running ones finish."""
    threads = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // jobs))}
    pending = list(order)
    running: dict[Future, tuple[str, str]] = {}
    failure: BaseException | None = None
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_worker_environment, initargs=(threads,)) as pool:
        while (pending and failure is None) or running:
            active = {name for name, _ in running.values()}
            for name in list(pending):
                if failure is not None or len(running) >= jobs:
                    break
                if reads[name] & (set(pending) | active):
                    continue
                pending.remove(name)
                key = key_of(name)
                if not unchanged(name, key):
                    future = pool.submit(execute, name)
                    running[future] = (name, key)
                    active.add(name)
            if not running:
                continue
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                name, key = running.pop(future)
                try:
                    finish(name, key, future.result())
                except BaseException as error:  # noqa: BLE001 - kept and raised once the others finish
                    failure = failure or error
    if failure is not None:
        raise failure


def timings_table(timings: dict[str, dict[str, Any]]) -> str:
    """``timings.json`` as a Markdown table in reading order, with the sum per profile."""
    order = {name: i for i, name in enumerate(NOTEBOOKS)}
    lines = ["| notebook | profile | seconds | notebooks at once | finished (UTC) | load average at the end (1 min) |",
             "|---|---|---:|---:|---|---:|"]
    totals: dict[str, float] = {}
    for name in sorted(timings, key=lambda n: (order.get(n, len(order)), n)):
        entry = timings[name]
        totals[entry["profile"]] = totals.get(entry["profile"], 0.0) + float(entry["seconds"])
        load = entry.get("load")
        lines.append(f"| {name} | `{entry['profile']}` | {float(entry['seconds']):,.1f} | {entry.get('jobs', 1)} | "
                     f"{entry.get('finished') or 'not recorded'} | {'not recorded' if load is None else f'{load:.2f}'} |")
    for profile, total in totals.items():
        lines.append(f"| **sum of the notebooks' times** | `{profile}` | **{total:,.1f}** ({total / 60:.1f} min) | | | |")
    return "\n".join(lines) + "\n"
