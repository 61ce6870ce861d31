"""What every notebook family's run shares: :func:`resolve` (the profile's settings, once),
:func:`open_models`, :class:`Provenance`, and :class:`Run`, whose ``write()`` puts every table in
``results/<profile>/<family>/<field>.csv`` plus ``run.json`` and whose ``read(dir)`` gives the same run
back without any model.

Every family's ``run(profile, *, seed=0, backends=None, **overrides)`` takes ``backends``, ready backends by
model entry or display name, used as they are (the other models are opened with
:func:`~finelogic.models.spec.open_model`); ``overrides``, settings of its profile section (None keeps the
profile's); and for each upstream family a ``<family>_run`` (None: :func:`find_run` of the profile and seed).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import io
import json
import logging
import math
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

import pandas as pd

import finelogic
from finelogic.config import repo_root, results_dir, scrub_secrets
from finelogic.data.problem import Problem
from finelogic.data.suites import EvalSet
from finelogic.memo import Memo, source_version
from finelogic.models.spec import ModelSpec, open_model, parse_model
from finelogic.profiles import get_profile
from finelogic.settings import as_data, build, merge

log = logging.getLogger(__name__)

R = TypeVar("R", bound="Run")
S = TypeVar("S")


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The checkout's :func:`commit_of`, once per process."""
    return commit_of(repo_root())


def commit_of(checkout: Path) -> str:
    """Short commit of the git checkout, ``+dirty`` when a tracked file outside ``results/`` changed (results
    are what runs write, not what they are made with); ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=checkout, capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":(top)",
                                ":(top,exclude)results"], cwd=checkout, capture_output=True, text=True, check=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


@dataclass(frozen=True)
class Provenance:
    """How a run's tables were made (the book's captions are written from this): ``settings`` the profile
    section after overrides, ``models`` display names in table order (``model_ids`` their cache identities),
    ``n`` items evaluated (the family says what an item is), ``data`` dataset -> where its items came from (a
    path, ``generated (...)``, ``not present``), ``model_calls`` / ``cache_hits`` this run's, ``seconds`` wall time."""

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

    def __post_init__(self) -> None:
        # Typed settings are recorded as the plain data they are made of (read back the same way), with any
        # server extra_body as its digest and URL credentials as *** (config.scrub_secrets).
        object.__setattr__(self, "settings", scrub_secrets(as_data(self.settings)))

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self), default=_jsonable))

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "Provenance":
        kwargs = {f.name: value[f.name] for f in fields(cls) if f.name in value}
        for name in ("models", "model_ids"):
            kwargs[name] = tuple(kwargs.get(name, ()))
        return cls(**kwargs)


@dataclass(frozen=True)
class Codec:
    """How a run field that is not a table is written (``dump(value) -> str``, a file with ``suffix``) and
    read back (``load(text)``); set with ``kept(codec)``. A field with neither a codec nor a DataFrame is live
    only: not written, declared ``compare=False``."""

    name: str
    dump: Any = field(repr=False)
    load: Any = field(repr=False)
    suffix: str = ".json"


def kept(codec: Codec, **kwargs: Any) -> Any:
    """A run field that :meth:`Run.write` writes with ``codec`` and :meth:`Run.read` reads back."""
    return field(metadata={"codec": codec}, **kwargs)


def _problem_lines(problems: Iterable[Problem]) -> str:
    return "".join(p.to_json() + "\n" for p in problems)


def _problems_from(text: str) -> list[Problem]:
    return [Problem.from_dict(json.loads(line)) for line in text.splitlines() if line.strip()]


#: A sequence of :class:`~finelogic.data.problem.Problem` records (JSON lines, the record's own schema).
PROBLEMS = Codec("problems", _problem_lines, lambda text: tuple(_problems_from(text)), ".jsonl")
#: One problem or None.
PROBLEM = Codec("problem", lambda p: _problem_lines([p] if p is not None else []),
                lambda text: next(iter(_problems_from(text)), None), ".jsonl")
#: Problems by id.
PROBLEMS_BY_ID = Codec("problems by id", lambda ps: _problem_lines(ps.values()),
                       lambda text: {p.id: p for p in _problems_from(text)}, ".jsonl")
#: Test sets (:class:`~finelogic.data.suites.EvalSet`): name, source, whether generated, their problems.
EVAL_SETS = Codec("test sets", lambda sets: json.dumps([{"name": s.name, "source": s.source, "generated": s.generated,
                                                         "problems": [p.to_dict() for p in s.problems]} for s in sets],
                                                       ensure_ascii=False),
                  lambda text: tuple(EvalSet(s["name"], tuple(map(Problem.from_dict, s["problems"])), s["source"],
                                             s["generated"]) for s in json.loads(text)))
#: Plain JSON data (numbers, strings, lists, string-keyed mappings).
JSON = Codec("json", lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True), json.loads)


def settings_codec(cls: type) -> Codec:
    """A frozen settings dataclass (or None) as its plain data, built back by :func:`finelogic.settings.build`."""
    return Codec(cls.__name__, lambda v: json.dumps(as_data(v), sort_keys=True),
                 lambda text: None if json.loads(text) is None else build(cls, json.loads(text), cls.__name__))


class BrokenRun(ValueError):
    """A result folder whose files do not match its ``run.json`` (cut, edited, missing or from another run);
    the message names the file."""


@dataclass(frozen=True)
class Run:
    """Base of every family's run: DataFrame fields are its tables, :func:`kept` fields are written with their
    codec, other fields are live only (``compare=False``)."""

    provenance: Provenance

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run's tables by field name, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), pd.DataFrame)}

    def kept_fields(self) -> dict[str, Codec]:
        """The fields written with a codec, by name."""
        return {f.name: f.metadata["codec"] for f in fields(self) if "codec" in f.metadata}

    def write(self, directory: str | Path | None = None) -> list[Path]:
        """Every table as ``<name>.csv``, every kept field with its codec, and ``run.json`` last (provenance,
        column types, each file's rows and SHA-256); default folder ``results/<profile>/<family>``. Written
        into a temporary folder, then renamed into place: a reader sees the old set or the new one, never a
        mix. Returns the paths written."""
        made = self.provenance
        directory = Path(directory) if directory is not None else results_dir(made.profile) / made.family
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
        try:
            files: dict[str, dict[str, Any]] = {}
            for name, frame in self.tables().items():
                written = _write_member(staging / f"{name}.csv", frame.to_csv(index=False))
                files[f"{name}.csv"] = written | {"rows": len(frame)}
            for name, codec in self.kept_fields().items():
                file = name + codec.suffix
                files[file] = _write_member(staging / file, codec.dump(getattr(self, name)))
            dtypes = {name: {c: str(t) for c, t in frame.dtypes.items()} for name, frame in self.tables().items()}
            # A CSV cannot tell an empty string from a missing value: text columns with nothing missing say so.
            complete = {name: [c for c in frame.columns if _is_text(frame[c]) and not frame[c].isna().any()]
                        for name, frame in self.tables().items()}
            meta = {"provenance": self.provenance.as_dict(), "dtypes": dtypes, "complete_text": complete,
                    "files": files}
            (staging / "run.json").write_text(json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False,
                                                         default=str) + "\n", encoding="utf-8")
            _swap_into_place(staging, directory)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return [directory / name for name in [*files, "run.json"]]

    @classmethod
    def read(cls: type[R], directory: str | Path) -> R:
        """The run :meth:`write` wrote to ``directory``, equal to it (:func:`same_run`); live-only fields keep
        their defaults; a read that meets a write in progress waits for it (up to 10 seconds).
        Raises FileNotFoundError without a ``run.json``, :class:`BrokenRun` naming a listed file that is missing
        or whose SHA-256 differs."""
        directory = Path(directory)
        deadline = time.monotonic() + 10.0
        while True:
            try:
                return cls._read_once(directory)
            except (FileNotFoundError, BrokenRun):
                # A write in progress has its staging or old-set folder beside the folder.
                if time.monotonic() > deadline or not any(directory.parent.glob(f".{directory.name}-*")):
                    raise
                time.sleep(0.02)

    @classmethod
    def _read_once(cls: type[R], directory: Path) -> R:
        meta_path = directory / "run.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"no run in {directory} (no run.json); run the notebook family first")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        texts = {name: _checked_member(directory / name, entry) for name, entry in (meta.get("files") or {}).items()}
        kwargs: dict[str, Any] = {"provenance": Provenance.from_dict(meta["provenance"])}
        tables = {f.name for f in fields(cls)}
        for name, dtypes in meta["dtypes"].items():
            if name not in tables:  # a table this run type no longer has (written by an older version)
                continue
            path = directory / f"{name}.csv"
            source = io.StringIO(texts[f"{name}.csv"]) if f"{name}.csv" in texts else path
            try:
                frame = pd.read_csv(source, keep_default_na=False, na_values=[""])
            except pd.errors.EmptyDataError:  # a table with no columns
                frame = pd.DataFrame()
            for column in meta.get("complete_text", {}).get(name, ()):
                if column in frame and frame[column].isna().any():
                    frame[column] = frame[column].astype(object).fillna("")
            kwargs[name] = _restore(frame, dtypes)
        for f in fields(cls):
            file = f.name + f.metadata["codec"].suffix if "codec" in f.metadata else None
            if file in texts:
                kwargs[f.name] = f.metadata["codec"].load(texts[file])
        return cls(**kwargs)


def same_run(a: Run, b: Run) -> bool:
    """True when ``a`` and ``b`` hold the same tables (values and column types), kept fields and provenance."""
    if type(a) is not type(b) or a.provenance.as_dict() != b.provenance.as_dict():
        return False
    for name, frame in a.tables().items():
        other = getattr(b, name)
        if not isinstance(other, pd.DataFrame) or not frame.reset_index(drop=True).equals(other.reset_index(drop=True)):
            return False
        if [str(t) for t in frame.dtypes] != [str(t) for t in other.dtypes]:
            return False
    return all(getattr(a, name) == getattr(b, name) for name in a.kept_fields())


def _is_text(column: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(column) or column.dtype == object


def _write_member(path: Path, text: str) -> dict[str, Any]:
    data = text.encode("utf-8")
    path.write_bytes(data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _checked_member(path: Path, entry: Mapping[str, Any]) -> str:
    """The text of a listed file, after checking it is the file ``run.json`` recorded."""
    if not path.is_file():
        raise BrokenRun(f"{path}: listed in {path.parent / 'run.json'} but missing; run the family again")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.get("sha256"):
        raise BrokenRun(f"{path}: its content is not what {path.parent / 'run.json'} recorded (SHA-256 {digest[:12]} "
                        f"!= {str(entry.get('sha256'))[:12]}, {len(data)} bytes, {entry.get('bytes')} recorded): "
                        "edited, cut or from another run; run the family again")
    return data.decode("utf-8")


def _swap_into_place(staging: Path, directory: Path) -> None:
    """Rename ``staging`` to ``directory``, replacing an old set whole; writers of one results folder take
    turns on an exclusive ``flock`` of the parent, so two runs finishing together leave the last one's set."""
    import fcntl

    handle = os.open(directory.parent, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if not directory.exists():
            os.replace(staging, directory)
            return
        old = Path(tempfile.mkdtemp(prefix=f".{directory.name}-old-", dir=directory.parent))
        os.replace(directory, old / directory.name)
        try:
            os.replace(staging, directory)
        except BaseException:
            os.replace(old / directory.name, directory)
            raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        os.close(handle)


def resolve(profiles: Mapping[str, S], profile: str, family: str, overrides: Mapping[str, Any]) -> S:
    """A family's settings in ``profile`` with ``overrides`` merged field by field (None keeps the profile's);
    the errors of :func:`~finelogic.profiles.get_profile` and :func:`finelogic.settings.merge`."""
    get_profile(profile)
    if profile not in profiles:
        raise ValueError(f"the {profile!r} profile has no {family} settings (it has {', '.join(profiles)})")
    return merge(profiles[profile], overrides, family)


def release(backend: Any) -> None:
    """Let go of ``backend``'s loaded model when it can open it again (``CachedBackend.release``)."""
    if callable(getattr(type(backend), "release", None)):
        backend.release()


def open_models(entries: Sequence[Any], backends: Mapping[str, Any] | None = None, *,
                batch_size: int = 16) -> list[tuple[ModelSpec, Any]]:
    """``(spec, backend)`` per model entry, in order: a handed-in backend where ``backends`` has one for the
    entry or its display name, used as it is (not cached: a test counts its calls), else
    :func:`finelogic.models.spec.open_model`."""
    backends = dict(backends or {})
    opened = []
    for entry in entries:
        key = entry if isinstance(entry, str) else (entry.get("name") if isinstance(entry, Mapping) else None)
        try:
            spec = parse_model(entry)
        except ValueError:
            if key not in backends:
                raise
            spec = ModelSpec(key, "given")  # a test's own name for a scripted backend
        name = key if key in backends else spec.name
        backend = backends.pop(name) if name in backends else open_model(spec, batch_size=batch_size)
        opened.append((spec, backend))
    if backends:
        raise ValueError(f"backends given for {', '.join(map(repr, backends))}, which the run does not use; "
                         f"its models are {', '.join(map(repr, entries))}")
    return opened


@contextlib.contextmanager
def judging_memos() -> Iterator[tuple[Memo, Memo]]:
    """The symbolic judge's verdicts and each response's steps as read, kept across soundness runs (what one
    judged the next reads back); flushed at the end."""
    with Memo("symbolic-verdicts", source_version("finelogic.eval.judges")) as verdicts, \
            Memo("soundness-steps", source_version("finelogic.eval.soundness")) as read:
        yield verdicts, read


def call_counts(backends: Iterable[Any]) -> tuple[int, int]:
    """(model calls, cache hits) summed over backends that keep :class:`~finelogic.models.base.BackendStats`."""
    stats = [getattr(backend, "stats", None) for backend in backends]
    return sum(getattr(s, "calls", 0) for s in stats), sum(getattr(s, "cache_hits", 0) for s in stats)


def set_threads(threads: int | None) -> None:
    """torch's CPU thread count for an in-process run (None or 0: torch's default)."""
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def parse_model_list(value: str | Sequence[str] | None) -> list[str]:
    """A notebook parameter naming models: a list, or one comma-separated string (``-p
    extra_models=gpt2,/data/ckpt``)."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(item).strip() for item in items if str(item).strip()]


class Stopwatch:
    """Seconds since creation (``float(watch)``), for ``Provenance.seconds``."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __float__(self) -> float:
        return round(time.perf_counter() - self.start, 3)


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
    return list(value) if isinstance(value, (set, frozenset, tuple, range)) else str(value)


@dataclass(frozen=True)
class PlanContext:
    """What the rehearsal (:mod:`finelogic.rehearsal`) tells a family's ``rehearsal_plan(ctx)`` about the
    models standing in for the profile's: ``serve(entry)`` a spec reached over HTTP, ``local(entry, index)``
    one read in process, ``trainable(entry)`` the one fine-tuning starts from; ``train`` over the profile's;
    ``fraction`` the real slice's share of every set (None: the stand-in rehearsal at full size) and
    ``max_new_tokens`` its cap; ``given`` the caller's overrides; ``served_by`` for the report's notes."""

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
        """A slice's share of ``n`` items, ``ceil(fraction x n)`` and at least 1 (``n`` itself outside a slice)."""
        return n if self.fraction is None else max(1, math.ceil(self.fraction * n))

    def capped(self, asked: int | None) -> str:
        """The report's words for the slice's cap on new tokens against the profile's (``asked``)."""
        return f"new tokens capped at {self.max_new_tokens}" + (f" (the profile: {asked:,})" if asked else "")


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
    """A run needs another family's run and none was made with the same key; the message names the folder,
    what differs, and the command that makes it."""


def make_command(family: str, profile: str) -> str:
    """The command that makes ``family``'s run for ``profile`` (and renders its page)."""
    return f"finelogic run --profile {profile} --family {family}"


def differing_settings(wanted: Mapping[str, Any], made: Provenance,
                       defaults: Mapping[str, Any] | None = None) -> list[str]:
    """The top-level settings whose recorded value in ``made`` differs from ``wanted``, sorted; with
    ``defaults``, a setting ``made`` does not record counts as its default."""
    defaults = defaults or {}
    recorded = {k: made.settings[k] if k in made.settings else defaults.get(k) for k in set(wanted) | set(made.settings)}
    return sorted(k for k in recorded if wanted.get(k) != recorded[k])


def find_run(run_type: type[R], family: str, profile: str, seed: int, settings: Mapping[str, Any] | None = None, *,
             data: Mapping[str, str] | None = None, directory: str | Path | None = None) -> R:
    """The written run of ``family`` whose key is (``profile``, ``seed``, ``settings`` (None: any), ``data``
    when given), from ``results/<profile>/<family>`` or ``directory``; :class:`UpstreamMissing` otherwise."""
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
            detail += f" ({', '.join(differing_settings(wanted, made))})"
        raise UpstreamMissing(f"the {family} run in {directory} was made with another {detail}; {again}, "
                              "or pass the same settings")
    log.info("reading the %s run in %s", family, directory)
    return written
