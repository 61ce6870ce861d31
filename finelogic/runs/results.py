"""A run's result files: :class:`Run`, whose ``write()`` puts every table in
``results/<profile>/<family>/<field>.csv``, every :func:`kept` field with its :class:`Codec`, and ``run.json``
(provenance, column types, each file's rows and SHA-256), all at once; ``read(dir)`` gives the same run back
without any model, after checking every file against ``run.json`` (:func:`checked_files`).
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, TypeVar

import pandas as pd

from finelogic.config import results_dir
from finelogic.data.problem import Problem
from finelogic.data.suites import EvalSet
from finelogic.files import replace_folder
from finelogic.runs.provenance import Provenance
from finelogic.typed_config import as_data, build

R = TypeVar("R", bound="Run")


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


def config_codec(cls: type) -> Codec:
    """A frozen config dataclass (or None) as its plain data, built back by :func:`finelogic.typed_config.build`."""
    return Codec(cls.__name__, lambda v: json.dumps(as_data(v), sort_keys=True),
                 lambda text: None if json.loads(text) is None else build(cls, json.loads(text), cls.__name__))


class BrokenRun(ValueError):
    """A result folder whose ``run.json`` cannot be read as a run's manifest, or whose files do not match it
    (cut, edited, missing or from another run): ``path`` the file at fault, ``fault`` what is wrong with it;
    the message names both and says what to do (``remedy``)."""

    def __init__(self, path: Path, fault: str, remedy: str = "run the family again") -> None:
        self.path, self.fault = Path(path), fault
        super().__init__(f"{path}: {fault}; {remedy}")


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
            replace_folder(staging, directory)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return [directory / name for name in [*files, "run.json"]]

    @classmethod
    def read(cls: type[R], directory: str | Path) -> R:
        """The run :meth:`write` wrote to ``directory``, equal to it (every table with its column types, every
        kept field, the provenance); live-only fields keep their defaults; a read that meets a write in progress
        waits for it (up to 10 seconds).
        Raises FileNotFoundError without a ``run.json``; :class:`BrokenRun` for a ``run.json`` that is not a
        whole manifest (cut, not JSON, without its list of files and their SHA-256) or a listed file that is
        missing or whose SHA-256 differs."""
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
        meta, texts = checked_files(directory)
        try:
            kwargs: dict[str, Any] = {"provenance": Provenance.from_dict(meta["provenance"])}
        except (TypeError, ValueError) as error:
            raise BrokenRun(directory / "run.json", f"its provenance does not read back ({error})") from None
        tables = {f.name for f in fields(cls)}
        for name, dtypes in meta["dtypes"].items():
            if name not in tables:  # a table this run type no longer has (written by an older version)
                continue
            try:
                frame = pd.read_csv(io.StringIO(texts[f"{name}.csv"]), keep_default_na=False, na_values=[""])
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


def _is_text(column: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(column) or column.dtype == object


def _write_member(path: Path, text: str) -> dict[str, Any]:
    data = text.encode("utf-8")
    path.write_bytes(data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def checked_files(directory: str | Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The manifest ``directory/run.json`` and the text of every file it lists, each checked against the
    SHA-256 it recorded. Raises FileNotFoundError without a ``run.json``, :class:`BrokenRun` naming the file
    at fault otherwise: a ``run.json`` that is not a whole manifest (every table it types listed in its files
    with their SHA-256), a listed file that is missing or whose content differs."""
    directory = Path(directory)
    meta_path = directory / "run.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"no run in {directory} (no run.json); run the notebook family first")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BrokenRun(meta_path, f"not a run's manifest: it does not read as JSON ({error}); cut or edited") from None
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), dict) for k in ("provenance", "dtypes")):
        raise BrokenRun(meta_path, "not a run's manifest: it needs a JSON object with its provenance, dtypes and files")
    files = meta.get("files")
    if not isinstance(files, dict) or not all(isinstance(e, dict) and "sha256" in e for e in files.values()):
        raise BrokenRun(meta_path, "lists no files with their SHA-256, so what the folder holds cannot be checked "
                                   "against what the run wrote (edited, or written by another program)")
    unlisted = sorted(f"{name}.csv" for name in meta["dtypes"] if f"{name}.csv" not in files)
    if unlisted:
        raise BrokenRun(meta_path, f"does not list {', '.join(unlisted)} among its files, so it cannot be checked")
    return meta, {name: _checked_member(directory / name, entry) for name, entry in files.items()}


def _checked_member(path: Path, entry: Mapping[str, Any]) -> str:
    """The text of a listed file, after checking it is the file ``run.json`` recorded."""
    if not path.is_file():
        raise BrokenRun(path, f"listed in {path.parent / 'run.json'} but missing")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.get("sha256"):
        raise BrokenRun(path, f"its content is not what {path.parent / 'run.json'} recorded (SHA-256 {digest[:12]} "
                              f"!= {str(entry.get('sha256'))[:12]}, {len(data)} bytes, {entry.get('bytes')} recorded): "
                              "edited, cut or from another run")
    return data.decode("utf-8")


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
