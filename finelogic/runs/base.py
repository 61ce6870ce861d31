"""What every notebook family's run shares: the profile resolved once, models opened once, provenance,
and writing / reading the run's tables.

A family module (``finelogic.runs.accuracy``, ...) exports ``run(profile, *, seed=0, backends=None,
**overrides)``. It calls :func:`resolve` once, :func:`open_models` once, the pure functions of
``finelogic.eval`` / ``finelogic.baselines``, and returns a frozen dataclass derived from :class:`Run`:
its DataFrame fields are the run's tables, ``provenance`` says how they were made. ``run.write()``
puts every table in ``results/<profile>/<family>/<field>.csv`` plus ``run.json``; ``Family.read(dir)``
gives the same object back (tables and provenance) without any model.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import subprocess
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TypeVar

import pandas as pd

import finelogic
from finelogic.config import repo_root, results_dir
from finelogic.files import write_csv_atomic, write_json_atomic
from finelogic.models.spec import ModelSpec, open_model, parse_model
from finelogic.profiles import get_profile

log = logging.getLogger(__name__)

R = TypeVar("R", bound="Run")


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """Short commit of the checkout, ``+dirty`` when tracked files changed; ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=repo_root(), capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo_root(),
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


@dataclass(frozen=True)
class Provenance:
    """How a run's tables were made (the book's captions are written from this).

    Attributes:
        family: ``accuracy``, ``depth``, ``soundness``, ...
        profile, seed: as passed to ``run``.
        settings: the profile section after overrides, exactly what the run used.
        models: display names of the models, in table order; ``model_ids`` their cache identities.
        n: items evaluated (the family says what an item is).
        data: dataset -> where its items came from (a path, ``generated (...)``, ``not present``).
        model_calls, cache_hits: model invocations made by this run, and answers read from the cache.
        seconds: wall time of the run.
        version, commit: the package version and the checkout's commit.
    """

    family: str
    profile: str
    seed: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    model_ids: tuple[str, ...] = ()
    n: int = 0
    data: Mapping[str, str] = field(default_factory=dict)
    model_calls: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    version: str = finelogic.__version__
    commit: str = field(default_factory=git_commit)

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self), default=_jsonable))

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "Provenance":
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in value.items() if k in known}
        for name in ("models", "model_ids"):
            kwargs[name] = tuple(kwargs.get(name, ()))
        return cls(**kwargs)


@dataclass(frozen=True)
class Run:
    """Base of every family's run: DataFrame fields are its tables; other fields need defaults (they are
    not written, so :meth:`read` leaves them at their defaults)."""

    provenance: Provenance

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run's tables by field name, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), pd.DataFrame)}

    def write(self, directory: str | Path | None = None) -> list[Path]:
        """Every table as ``<name>.csv`` and the provenance (with column types) as ``run.json``, each written
        atomically; default folder ``results/<profile>/<family>``. Returns the paths written."""
        directory = Path(directory) if directory is not None else results_dir(self.provenance.profile) / self.provenance.family
        paths = [write_csv_atomic(frame, directory / f"{name}.csv") for name, frame in self.tables().items()]
        dtypes = {name: {c: str(t) for c, t in frame.dtypes.items()} for name, frame in self.tables().items()}
        paths.append(write_json_atomic({"provenance": self.provenance.as_dict(), "dtypes": dtypes}, directory / "run.json"))
        return paths

    @classmethod
    def read(cls: type[R], directory: str | Path) -> R:
        """The run written to ``directory`` by :meth:`write`: its tables (column types restored) and
        provenance; fields that are not tables keep their defaults."""
        directory = Path(directory)
        meta_path = directory / "run.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"no run in {directory} (no run.json); run the notebook family first")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        kwargs: dict[str, Any] = {"provenance": Provenance.from_dict(meta["provenance"])}
        for name, dtypes in meta["dtypes"].items():
            frame = pd.read_csv(directory / f"{name}.csv", keep_default_na=False, na_values=[""])
            kwargs[name] = _restore(frame, dtypes)
        return cls(**kwargs)


def resolve(profile: str, family: str, overrides: Mapping[str, Any], *, optional: Iterable[str] = ()) -> dict[str, Any]:
    """The profile's ``family`` section with ``overrides`` applied (None values keep the profile's).

    Raises:
        ValueError: an override names no setting of the section (nor of ``optional``); the message
            lists the valid names.
    """
    section = dict(get_profile(profile).section(family))
    valid = set(section) | set(optional)
    unknown = sorted(k for k in overrides if k not in valid)
    if unknown:
        raise ValueError(f"{family} run: unknown setting(s) {', '.join(unknown)}; "
                         f"the {profile!r} profile's {family} settings are {', '.join(sorted(valid))}")
    section.update({k: v for k, v in overrides.items() if v is not None})
    return section


def open_models(entries: Sequence[Any], backends: Mapping[str, Any] | None = None, *,
                batch_size: int = 16) -> list[tuple[ModelSpec, Any]]:
    """``(spec, backend)`` per model entry, in order: a handed-in backend where ``backends`` has one for the
    entry as written (or for its display name), else :func:`finelogic.models.spec.open_model`.

    Handed-in backends are used as they are (not wrapped in the cache): a test hands in a scripted
    backend and counts its calls; a user hands in a backend configured their own way.
    """
    backends = dict(backends or {})
    opened = []
    for entry in entries:
        key = entry if isinstance(entry, str) else (entry.get("name") if isinstance(entry, Mapping) else None)
        if key is not None and key in backends:
            spec = _spec_or_name(entry, key)
            opened.append((spec, backends.pop(key)))
            continue
        spec = parse_model(entry)
        if spec.name in backends:
            opened.append((spec, backends.pop(spec.name)))
        else:
            opened.append((spec, open_model(spec, batch_size=batch_size)))
    if backends:
        raise ValueError(f"backends given for {', '.join(map(repr, backends))}, which the run does not use; "
                         f"its models are {', '.join(map(repr, entries))}")
    return opened


def call_counts(backends: Iterable[Any]) -> tuple[int, int]:
    """(model calls, cache hits) summed over backends that keep :class:`~finelogic.models.base.BackendStats`."""
    calls = hits = 0
    for backend in backends:
        stats = getattr(backend, "stats", None)
        calls += getattr(stats, "calls", 0)
        hits += getattr(stats, "cache_hits", 0)
    return calls, hits


def set_threads(threads: int | None) -> None:
    """torch's CPU thread count for an in-process run (None or 0: torch's default)."""
    if threads:
        import torch

        torch.set_num_threads(int(threads))


class Stopwatch:
    """Seconds since creation (``float(watch)``), for ``Provenance.seconds``."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __float__(self) -> float:
        return round(time.perf_counter() - self.start, 3)


def _spec_or_name(entry: Any, key: str) -> ModelSpec:
    try:
        return parse_model(entry)
    except ValueError:  # a test's own name for a scripted backend
        return ModelSpec(key, "given")


def _restore(frame: pd.DataFrame, dtypes: Mapping[str, str]) -> pd.DataFrame:
    for column, dtype in dtypes.items():
        if column not in frame or (str(frame[column].dtype) == dtype and dtype != "object"):
            continue
        try:
            if dtype == "bool":
                frame[column] = frame[column].map({True: True, False: False, "True": True, "False": False})
            elif dtype == "object":
                frame[column] = pd.Series([None if pd.isna(v) else v for v in frame[column]], index=frame.index,
                                          dtype=object)
            else:
                frame[column] = frame[column].astype(dtype)
        except (TypeError, ValueError):
            pass  # keep what read_csv made of it
    return frame


def _jsonable(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple, range)):
        return list(value)
    return str(value)


@dataclass(frozen=True)
class PlanContext:
    """What the rehearsal (:mod:`finelogic.rehearsal`) tells a family about the models that stand in for
    the profile's, so the family itself says how it is rehearsed (its ``rehearsal_plan(ctx)``) and how
    its real slice is cut (its ``slice_plan(ctx)``); both return a :data:`Plan`.

    Attributes:
        profile: the profile rehearsed (``paper``).
        serve: a profile model entry -> a spec reached over HTTP (the stand-in server, or llama.cpp's).
        local: (a profile model entry, its index) -> a spec read in process (a random-init stand-in
            checkpoint, or the embedded model in the real slice).
        trainable: a profile model entry -> the in-process spec fine-tuning starts from.
        train: the training settings the rehearsal uses (over the profile's ``train``).
        fraction: the real slice's share of every set (None: the stand-in rehearsal at full size).
        max_new_tokens: the real slice's cap on new tokens (None: the profile's).
        given: the caller's overrides for this family (e.g. which styles are trained).
        served_by: what answers served models, for the report's notes (``the llama.cpp server (m)``).
    """

    profile: str
    serve: Any
    local: Any
    trainable: Any
    served_by: str = "stand-in server"
    train: Mapping[str, Any] = field(default_factory=dict)
    fraction: float | None = None
    max_new_tokens: int | None = None
    given: Mapping[str, Any] = field(default_factory=dict)

    def sliced(self, n: int) -> int:
        """``ceil(fraction x n)``, at least 1 (``n`` itself outside a slice)."""
        import math

        return n if self.fraction is None else max(1, math.ceil(self.fraction * n))

    def capped(self, section_generation: Mapping[str, Any]) -> str:
        """The report's words for the slice's cap on new tokens against the profile's."""
        asked = section_generation.get("max_new_tokens")
        return f"new tokens capped at {self.max_new_tokens}" + (f" (the profile: {asked:,})" if asked else "")

    def section(self, name: str) -> Mapping[str, Any]:
        return get_profile(self.profile).section(name)


def plan(overrides: Mapping[str, Any] | None = None, backends: Mapping[str, Any] | None = None,
         note: str = "") -> dict[str, Any]:
    """A family's rehearsal or slice plan: the ``run`` overrides, ready backends, and the report's note."""
    return {"overrides": dict(overrides or {}), "backends": dict(backends or {}), "note": note}


def entry_name(entry: Any) -> str:
    """The display name of a profile's model entry (a spec dict's ``name``, else its model or path)."""
    if isinstance(entry, Mapping):
        return str(entry.get("name") or entry.get("model") or entry.get("path"))
    return {"embedded": "SmolLM2-135M-Instruct", "random-init": "SmolLM2-135M (random init)"}.get(str(entry), str(entry))


class UpstreamMissing(LookupError):
    """A run needs another family's run (its upstream) and none was made with the same key; the message
    names the folder, what differs, and the command that makes it."""


def make_command(family: str, profile: str) -> str:
    """The command that makes ``family``'s run for ``profile`` (and renders its page)."""
    return f"finelogic run --profile {profile} --family {family}"


def find_run(run_type: type[R], family: str, profile: str, seed: int, settings: Mapping[str, Any] | None, *,
             data: Mapping[str, str] | None = None, directory: str | Path | None = None) -> R:
    """The written run of ``family`` whose key is (``profile``, ``seed``, ``settings``, and ``data`` when
    given; ``settings`` None: any settings): read from ``results/<profile>/<family>`` (or ``directory``).

    Raises:
        UpstreamMissing: no run there, or one made with another key; the message says which part of the
            key differs and the command that makes the run wanted.
    """
    directory = Path(directory) if directory is not None else results_dir(profile) / family
    again = f"make it with `{make_command(family, profile)}`" + (f" (seed {seed})" if seed else "")
    try:
        written = run_type.read(directory)
    except FileNotFoundError:
        raise UpstreamMissing(f"no {family} run in {directory}; {again}") from None
    made = written.provenance
    wanted = (dict(made.settings) if settings is None
              else Provenance(family, profile, seed, settings=settings).as_dict()["settings"])
    differs = [name for name, ours, theirs in (("profile", profile, made.profile), ("seed", seed, made.seed),
                                                ("settings", wanted, dict(made.settings)))
               if ours != theirs]
    if not differs and data is not None and dict(made.data) != dict(data):
        differs.append("data")
    if differs:
        detail = ", ".join(differs)
        if "settings" in differs:
            keys = sorted(k for k in set(wanted) | set(made.settings) if wanted.get(k) != made.settings.get(k))
            detail += f" ({', '.join(keys)})"
        raise UpstreamMissing(f"the {family} run in {directory} was made with another {detail}; {again}, "
                              "or pass the same settings")
    log.info("reading the %s run in %s", family, directory)
    return written
