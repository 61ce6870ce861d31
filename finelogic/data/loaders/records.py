"""What every format shares: the errors, reading a file into raw records, and turning records into Problems;
a format module writes one ``convert(item) -> Problem`` and describes its files in a :class:`Format`."""
from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Fact, Problem

log = logging.getLogger("finelogic.data.loaders")


class DataNotFoundError(FileNotFoundError):
    """No local file and no usable hub copy for a dataset; the message says where to put which file."""


class DatasetFormatError(ValueError):
    """A file or item does not match its published format; the message names file, line/item and field."""


class DataDirError(FileNotFoundError):
    """``$FINELOGIC_DATA_DIR`` names no folder: an error, never a silent fall-back to stand-ins."""


class LoadedDataset(list):
    """A ``list[Problem]`` whose ``skipped`` lists what ``strict=False`` skipped, ``(location, reason)`` per item
    or file, e.g. ``("data/folio-validation.jsonl line 17", "missing field 'conclusion'")``."""

    def __init__(self, problems: Iterable[Problem] = (), skipped: Iterable[tuple[str, str]] = ()):
        super().__init__(problems)
        self.skipped: list[tuple[str, str]] = list(skipped)


class ItemError(DatasetFormatError):
    """Raised inside a converter, naming the field; the loader prefixes the item's location."""


def missing(name: str) -> ItemError:
    return ItemError(f"missing field '{name}'")


def bad(name: str, what: str) -> ItemError:
    return ItemError(f"field '{name}': {what}")


@dataclass(frozen=True)
class Item:
    """One raw record and where it came from (``location`` is what error messages print)."""

    data: Any
    location: str
    index: int
    stem: str  # default ids are ``<stem>_<index>``: the file name without suffix, or ``<repo>_<split>``
    encoding: str = "utf-8"
    positional: bool = False  # its file gives one id to several records: the item is known by its position


def _json_files(folder: Path, split: str | None) -> list[Path]:
    files = sorted(p for p in folder.glob("*.json*") if p.suffix in (".json", ".jsonl"))
    return [p for p in files if split is None or split in p.stem]


@dataclass(frozen=True)
class Format:
    """How one dataset's files are found and read: the ``format`` of its :class:`finelogic.data.datasets.Dataset`.
    ``convert`` raises :class:`ItemError` naming the field; ``where`` is the files' place in the published layout,
    for messages; ``options`` are the keyword options ``load_dataset`` passes on to ``find`` and ``missing``."""

    convert: Callable[[Item], Problem]
    where: str
    find: Callable[..., list[Path]] = _json_files  # (dataset folder, split, **options) -> files
    read: Callable[[Path], list[Item]] | None = None  # file -> items; None: read_items
    options: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)  # items of each published file, by its path's end
    missing: Callable[..., list[str]] | None = None  # (files, **options) -> published files not among them


#: The longest string a data file may hold (characters; the published sets' longest is a few thousand).
MAX_STRING = 1_000_000
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def data_file(path: str | os.PathLike) -> Path:
    """``path``, checked to be a regular file after following links (every loader's file passes this before it is
    opened); a :class:`DatasetFormatError` names what it is instead (a folder, FIFO, dangling link, ...)."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise DatasetFormatError(f"{path}: a symbolic link to {os.readlink(path)!r}, which does not exist") from None
        raise DataNotFoundError(f"{path}: no such file") from None
    except OSError as error:  # ELOOP and the like
        raise DatasetFormatError(f"{path}: cannot be followed ({error.strerror}; a loop of symbolic links?)") from None
    if stat.S_ISDIR(info.st_mode):
        raise DatasetFormatError(f"{path}: is a folder, expected a file")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise DatasetFormatError(f"{path}: {kind}, not a regular file; data is read only from regular files")
    return path


def parse_json(text: str, where: str) -> Any:
    """``json.loads(text)`` for data files: ``NaN`` / ``Infinity`` (Python's reader takes them) and nesting too
    deep to follow are errors naming ``where``; :class:`json.JSONDecodeError` passes through."""
    def reject(constant: str) -> Any:
        raise DatasetFormatError(f"{where}: holds the number {constant}, which is not JSON (an id, count or label "
                                 "cannot be NaN or infinite)")

    try:
        return json.loads(text, parse_constant=reject)
    except RecursionError:
        raise DatasetFormatError(f"{where}: JSON nested too deeply to read (thousands of levels); not a "
                                 "dataset file") from None


def check_strings(value: Any, where: str) -> None:
    """Raise :class:`DatasetFormatError` naming ``where`` for a string in ``value`` (keys too) over ``MAX_STRING``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > MAX_STRING:
                raise DatasetFormatError(f"{where}: a string of {len(item):,} characters (at most {MAX_STRING:,}); "
                                         f"it begins {item[:40]!r}")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def read_text(path: Path) -> tuple[str, str]:
    """``(text, encoding)`` of the regular file ``path`` (:func:`data_file`): UTF-8, else cp1252 (some Multi-LogiEval files) when it holds no UTF-8
    multi-byte character at all (a UTF-8 file with one stray byte is an error, not mojibake)."""
    path = data_file(path)
    try:  # opened without blocking, so that a FIFO swapped in is refused too
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except PermissionError as error:
        raise DatasetFormatError(f"{path}: present but not readable ({error.strerror}); fix its permissions") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DatasetFormatError(f"{path}: not a regular file (replaced while being opened?)")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read()
    finally:
        os.close(fd)
    if not raw.strip():
        raise DatasetFormatError(f"{path}: empty file")
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError as utf8_error:
        if any(ord(c) > 127 for c in raw.decode("utf-8", errors="ignore")):
            raise DatasetFormatError(
                f"{path}: mixed encodings: UTF-8 text with byte 0x{raw[utf8_error.start]:02x} at offset "
                f"{utf8_error.start} that is not UTF-8 ({utf8_error.reason}); re-save the file as UTF-8"
            ) from None
        try:
            return raw.decode("cp1252"), "cp1252"
        except UnicodeDecodeError as cp_error:
            raise DatasetFormatError(
                f"{path}: undecodable bytes: {utf8_error.reason} at byte {utf8_error.start} for UTF-8, and "
                f"byte 0x{raw[cp_error.start]:02x} at {cp_error.start} is undefined in cp1252; "
                "re-save the file as UTF-8"
            ) from None


def describe(index: int, record: Any) -> str:
    if isinstance(record, Mapping) and "id" in record:
        return f"item {index} (id {record['id']!r})"
    return f"item {index}"


def read_items(path: Path) -> list[Item]:
    """Records of a JSON list, a single JSON object, or JSON Lines (one object per line)."""
    text, encoding = read_text(path)
    stripped = text.lstrip()
    if path.suffix != ".jsonl" and stripped[:1] in "[{":
        try:
            document = parse_json(text, str(path))
        except json.JSONDecodeError as error:
            if error.msg != "Extra data":  # "Extra data" = several objects: read it as JSON Lines
                raise DatasetFormatError(
                    f"{path} line {error.lineno} column {error.colno}: invalid JSON ({error.msg}); "
                    "truncated or corrupted file?"
                ) from None
        else:
            if isinstance(document, list):
                items = [Item(rec, f"{path} {describe(i, rec)}", i, path.stem, encoding)
                         for i, rec in enumerate(document)]
            else:
                items = [Item(document, str(path), 0, path.stem, encoding)]
            if len(text) > MAX_STRING:  # a shorter file cannot hold a longer string
                for item in items:
                    check_strings(item.data, item.location)
            return items
    items = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json(line, f"{path} line {lineno}")
        except json.JSONDecodeError as error:
            raise DatasetFormatError(
                f"{path} line {lineno}: invalid JSON ({error.msg} at column {error.colno}); truncated line?"
            ) from None
        if len(line) > MAX_STRING:
            check_strings(record, f"{path} line {lineno}")
        items.append(Item(record, f"{path} line {lineno}", len(items), path.stem, encoding))
    return items


def convert_items(
    items: Iterable[Item],
    convert: Callable[[Item], Problem],
    strict: bool,
    skipped: list[tuple[str, str]],
    seen: dict[str, str] | None = None,
) -> list[Problem]:
    """Each item through ``convert``; a bad item raises (strict) or is added to ``skipped``. A repeated id
    (``seen``: id -> the first item's location) is a bad item: two records would be scored as one."""
    problems = []
    seen = {} if seen is None else seen
    for item in items:
        try:
            if not isinstance(item.data, Mapping):
                raise ItemError(f"expected a JSON object, got {type(item.data).__name__}")
            problem = convert(item)
            if problem.id in seen:
                raise ItemError(f"id {problem.id!r} is already the id of {seen[problem.id]}")
            seen[problem.id] = item.location
            problems.append(problem)
        except ItemError as error:
            if strict:
                raise DatasetFormatError(f"{item.location}: {error}") from None
            skipped.append((item.location, str(error)))
    return problems


def load_files(files: Sequence[Path], fmt: Format, strict: bool) -> LoadedDataset:
    """Read and convert ``files`` in order; bad files, items and counts raise, or are skipped when not ``strict``."""
    read = fmt.read or read_items
    skipped: list[tuple[str, str]] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}  # ids are unique across the files of one load
    for path in files:
        try:
            items = read(path)
        except DatasetFormatError as error:
            if strict:
                raise
            skipped.append((str(path), str(error).removeprefix(f"{path}").lstrip(": ")))
            continue
        kept = convert_items(items, fmt.convert, strict, skipped, seen)  # bad items first: they name a line
        problems.extend(kept)
        posix = path.as_posix()
        expected = next((n for key, n in fmt.counts.items() if posix == key or posix.endswith("/" + key)), None)
        if expected is not None and len(kept) != expected:  # what is kept, so a skipped item counts as missing
            message = (f"{len(items)} items where the published file has {expected}; cut short or edited?"
                       if len(items) != expected else
                       f"{len(kept)} of its {expected} published items kept (the others are listed as skipped)")
            if strict:
                raise DatasetFormatError(f"{path}: {message}")
            skipped.append((str(path), message))
    warn_skipped(skipped)
    return LoadedDataset(problems, skipped)


def warn_skipped(skipped: list[tuple[str, str]]) -> None:
    if skipped:
        counts = Counter(reason for _, reason in skipped)
        summary = "; ".join(f"{n} x {reason}" for reason, n in counts.most_common())
        log.warning("skipped %d bad item(s) (strict=False): %s", len(skipped), summary)


def required(record: Mapping[str, Any], name: str, kind: type | tuple[type, ...] = str) -> Any:
    """``record[name]``, checked to be of ``kind``; :class:`ItemError` naming the field otherwise."""
    if name not in record or record[name] is None:
        raise missing(name)
    value = record[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise bad(name, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


def split_sentences(text: str) -> list[str]:
    """Split a context paragraph at ``. ``/``! ``/``? `` before a capital letter (a heuristic: FOLIO's Logic-LM
    contexts give the v0.0 premise count for 176 of 204 stories)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def numbered_facts(texts: Iterable[str]) -> tuple[Fact, ...]:
    """``fact1, fact2, ...`` for the texts in order."""
    return tuple(Fact(f"fact{i}", t.strip()) for i, t in enumerate(texts, start=1))


def label(value: Any, name: str, mapping: Mapping[str, str]) -> str:
    """A label read through ``mapping`` (case, spaces and ``__`` markers ignored)."""
    key = str(value).strip().strip("_").strip().lower()
    if key not in mapping:
        raise bad(name, f"unknown label {value!r} (expected one of {sorted(set(mapping))})")
    return mapping[key]


FOLIO_LABELS = {"true": PROVED, "false": DISPROVED, "uncertain": UNKNOWN, "unknown": UNKNOWN}
YES_NO = {"yes": PROVED, "no": DISPROVED}
FLD_LABELS = {"proved": PROVED, "disproved": DISPROVED, "unknown": UNKNOWN}
