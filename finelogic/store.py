"""The one SQLite file of what finelogic keeps and reuses: model calls (all verbs), memos, generated sets.

``$FINELOGIC_CACHE/store.sqlite`` (:func:`finelogic.config.store_path`) in WAL mode, shared by processes; each
record is a row written in one transaction or not at all (README, "Caches"). Tables: ``calls`` (one row per
model call, keyed by :func:`canonical_key`), ``memos`` (:class:`finelogic.memo.Memo`), ``claims`` (requests a
process is computing now), ``datasets`` (:mod:`finelogic.data.stored`, with count and sha256). A row whose
value is not of its kind's type (:func:`decode`; a memo's: its check) is named in a warning, deleted and computed
again. A claim is taken in the transaction that found its request missing and renewed by a heartbeat, so a
killed process delays the others by at most one :data:`LEASE_SECONDS`, counted on this host's clock whatever
expiry the claimant wrote. SQLite's errors about the file (full disk, read-only, damaged) are a
:class:`StoreError` that names it and says what to do.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import math
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

log = logging.getLogger(__name__)

#: The store's layout; a store written by a newer layout is refused rather than misread.
FORMAT = 1
#: How long a claim holds without renewal: the longest a stopped or killed peer delays the others.
LEASE_SECONDS = 30.0
#: How long a write waits for another process's transaction (they take milliseconds) before failing.
BUSY_SECONDS = 120.0
#: Keys per ``IN (...)`` query (below SQLite's limit on bound parameters).
_BATCH = 500
#: Asking for at least this share of a model's stored answers of one kind reads them all in one scan (faster
#: per row than looking each key up; a cached rerun asks for most of them).
SCAN_SHARE = 0.25
_JSON = json.JSONDecoder()
#: SQL: the row's value is one JSON text (what a scan gathers; other rows are decoded one by one).
_WHOLE = "typeof(value) = 'text' AND json_valid(value)"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, kind TEXT NOT NULL, model TEXT NOT NULL,
                                  request TEXT NOT NULL, value NOT NULL, stored REAL NOT NULL);
CREATE INDEX IF NOT EXISTS calls_by_model ON calls (model, kind);
CREATE TABLE IF NOT EXISTS memos (memo TEXT NOT NULL, version TEXT NOT NULL, key TEXT NOT NULL,
                                  value TEXT NOT NULL, stored REAL NOT NULL, PRIMARY KEY (memo, version, key));
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, holder TEXT, pid INTEGER, host TEXT, started TEXT,
                                   expires REAL);
CREATE TABLE IF NOT EXISTS datasets (key TEXT PRIMARY KEY, name TEXT NOT NULL, problems TEXT NOT NULL,
                                     count INTEGER NOT NULL, sha256 TEXT NOT NULL, stored REAL NOT NULL);
"""


class StoreError(RuntimeError):
    """The store cannot be used: not a SQLite file, a newer layout, a file it cannot write."""


class BadValue(ValueError):
    """A stored value that is not of its kind's type (see :func:`decode`)."""


def _of_the_file(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's about the file (full, read-only, damaged, locked...), not about a statement."""
    return type(error) in (sqlite3.OperationalError, sqlite3.DatabaseError)


def store_error(path: Path, error: sqlite3.Error) -> StoreError:
    """SQLite's ``error`` on the store at ``path`` as a :class:`StoreError` that names the file and says what to do."""
    text = str(error)
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code of an extended one
    if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return StoreError(f"store {path}: not a usable SQLite store ({text}); move it away (or delete it: what it "
                          "held is computed again) and run again")
    if code == sqlite3.SQLITE_FULL or "disk is full" in text:
        return StoreError(f"store {path}: the disk is full ({text}); free space on the disk holding "
                          f"{path.parent} (or set FINELOGIC_CACHE to a folder on another disk) and run again")
    if code == sqlite3.SQLITE_IOERR or "disk I/O error" in text:
        return StoreError(f"store {path}: a disk error while using it ({text}); the disk holding {path.parent} "
                          "may be full or gone: free space (or set FINELOGIC_CACHE to a folder on another disk) "
                          "and run again")
    if code == sqlite3.SQLITE_READONLY or "readonly" in text:
        return StoreError(f"store {path}: cannot be written ({text}); the file and its folder {path.parent} must "
                          f"be writable by you (SQLite writes {path.name}-wal and -shm beside it): change their "
                          "permissions or set FINELOGIC_CACHE to a writable folder")
    if code == sqlite3.SQLITE_CANTOPEN or "unable to open" in text:
        return StoreError(f"store {path}: cannot be opened ({text}); its folder {path.parent} must exist and be "
                          "writable by you: change its permissions or set FINELOGIC_CACHE to a writable folder")
    if "locked" in text or "busy" in text:
        return StoreError(f"store {path}: {text} (another process held its write lock for {BUSY_SECONDS:.0f} s)")
    return StoreError(f"store {path}: {text}")


# ---------------------------------------------------------------------------------------------- values
def encode(kind: str, value: Any) -> str | bytes:
    """The stored form of an answer of ``kind``: JSON text, or an ``.npz`` blob for hidden states;
    :class:`BadValue` for an answer not of the kind's type, so nothing unreadable is written."""
    if kind == "hidden_states":
        return _arrays_blob(value)
    text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    decode(kind, text)  # the same check as on read: what is written can be read back
    return text


def decode(kind: str, raw: Any) -> Any:
    """The answer stored as ``raw`` for ``kind``, checked by type; :class:`BadValue` says what is wrong.
    ``generate``, ``loglikelihood`` and ``json`` (memos) are one JSON text each (their checks: :data:`_PROBLEM`);
    ``hidden_states`` an ``.npz`` blob: all arrays' rows in ``data``, the rows per array in ``sizes``."""
    if kind == "hidden_states":
        return _blob_arrays(raw)
    if not isinstance(raw, str):
        raise BadValue(f"a {type(raw).__name__} where JSON text was expected")
    try:
        value, end = _JSON.raw_decode(raw)
    except (ValueError, RecursionError) as error:
        raise BadValue(f"not one JSON value ({error})") from None
    if end != len(raw):
        raise BadValue(f"more than one JSON value (text after character {end})")
    problem = _problem_of(kind)(value)
    if problem is not None:
        raise BadValue(problem)
    return value


def _loglikelihood_problem(v: Any) -> str | None:
    if type(v) is not list or len(v) != 3:
        return f"a log-likelihood must be [logprob, tokens, greedy], not {_short(v)}"
    logprob, tokens, greedy = v
    if type(logprob) not in (int, float) or logprob != logprob or logprob == math.inf:
        return f"the log-prob must be a number (not NaN or +inf), not {_short(logprob)}"
    if type(tokens) is not int or tokens < 0:
        return f"the token count must be a whole number >= 0, not {_short(tokens)}"
    if type(greedy) is not bool:
        return f"'greedy' must be true or false, not {_short(greedy)}"
    return None


def _generation_problem(v: Any) -> str | None:
    if type(v) is not dict or not v.keys() <= {"text", "finish_reason"}:
        return f"a generation must be {{'text', 'finish_reason'}}, not {_short(v)}"
    if type(v.get("text")) is not str or not v["text"]:
        return f"the text must be a non-empty string, not {_short(v.get('text'))}"
    if "finish_reason" not in v or not (v["finish_reason"] is None or type(v["finish_reason"]) is str):
        return f"finish_reason must be a string or null, not {_short(v.get('finish_reason'))}"
    return None


#: What is wrong with a parsed JSON value of each kind (None: nothing); the types are JSON's, exactly.
_PROBLEM = {"loglikelihood": _loglikelihood_problem, "generate": _generation_problem, "json": lambda v: None}


def _problem_of(kind: str) -> Any:
    return _PROBLEM.get(kind, lambda v: f"unknown kind {kind!r}")


def check_all(kind: str, values: dict[str, Any]) -> dict[str, BadValue]:
    """What is wrong with each value of ``values`` (parsed JSON, by key) that is not of ``kind``'s type."""
    problem = _problem_of(kind)
    return {key: BadValue(why) for key, value in values.items() if (why := problem(value)) is not None}


def decode_many(kind: str, rows: Sequence[tuple[str, Any, int]]) -> tuple[dict[str, Any], dict[str, BadValue]]:
    """:func:`decode` of many ``(key, raw, json_valid)`` rows: the values and what is wrong with each bad one.
    Rows SQLite finds to be one JSON value each are parsed in one ``json.loads`` of their list."""
    whole = [(k, raw) for k, raw, valid in rows if valid == 1 and type(raw) is str] if kind != "hidden_states" else []
    try:
        parsed = json.loads("[" + ",".join(raw for _, raw in whole) + "]")
    except (ValueError, RecursionError):
        parsed = []
    values = {key: value for (key, _), value in zip(whole, parsed)} if len(parsed) == len(whole) else {}
    done = set(values)
    bad = check_all(kind, values)
    for key in bad:
        del values[key]
    for key, raw, _ in rows:
        if key not in done:
            try:
                values[key] = decode(kind, raw)
            except BadValue as error:
                bad[key] = error
    return values, bad


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _arrays_blob(result: Any) -> bytes:
    """One array, or a list of arrays with the same trailing shape, as an ``.npz`` blob (all rows in one member)."""
    nested = isinstance(result, list)
    arrays = [np.asarray(a) for a in (result if nested else [result])]
    if any(a.dtype == object for a in arrays):
        raise BadValue("hidden states must be numeric arrays, not objects")
    sizes = np.array([len(a) for a in arrays], dtype=np.int64)
    data = np.concatenate(arrays) if arrays else np.zeros((0, 0), dtype=np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, nested=nested, sizes=sizes, data=data)
    return buffer.getvalue()


def _blob_arrays(raw: Any) -> Any:
    if not isinstance(raw, bytes):
        raise BadValue(f"a {type(raw).__name__} where an .npz blob was expected")
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as stored:
            data, sizes, nested = stored["data"], stored["sizes"], stored["nested"]
        if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or (sizes < 0).any() or int(sizes.sum()) != len(data):
            raise BadValue(f"row counts {sizes.tolist()[:8]} do not add up to the {len(data)} rows stored")
        arrays = np.split(data, np.cumsum(sizes)[:-1]) if len(sizes) else []
        if nested.shape != () or nested.dtype != bool:
            raise BadValue(f"'nested' must be one boolean, not {nested!r}")
        if any(a.dtype.kind not in "fiub" for a in arrays):
            raise BadValue("hidden states must be numeric arrays")
        if not bool(nested) and len(arrays) != 1:
            raise BadValue(f"one array expected, {len(arrays)} stored")
        return arrays if bool(nested) else arrays[0]
    except BadValue:
        raise
    except Exception as error:  # a cut or foreign blob: zipfile, numpy and KeyError each say it their way
        raise BadValue(f"not a whole .npz of arrays ({type(error).__name__}: {error})") from None


# ---------------------------------------------------------------------------------------------- processes
_HOST = socket.gethostname()


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux ``/proc``; "-" elsewhere): with the pid,
    it tells a live claimant from a new process that reuses a dead one's pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "-"


def alive(pid: int, started: str) -> bool:
    """Whether process ``pid`` of this machine, started at ``started`` (see :func:`start_time`), still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except (OverflowError, ValueError):
        return False
    return started == "-" or start_time(pid) in (started, "-")


# ---------------------------------------------------------------------------------------------- the store
def _identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode (None when it is gone): what tells a replaced file from the same one."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _rows_of(db: sqlite3.Connection, select: str, keys: list[str]) -> list[tuple]:
    """``select ... WHERE key IN (keys)``, in batches of :data:`_BATCH` keys."""
    rows = []
    for start in range(0, len(keys), _BATCH):
        batch = keys[start:start + _BATCH]
        rows += db.execute(f"{select} WHERE key IN ({','.join('?' * len(batch))})", batch).fetchall()
    return rows


class Store:
    """The SQLite store at ``path`` (created with its tables if missing), safe for threads (one connection
    behind a lock) and processes (SQLite's locking); :func:`open_store` shares one per file and process."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise StoreError(f"store {self.path}: a folder, not a SQLite file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._beats = threading.Condition()
        self._holders: dict[str, list[float]] = {}  # holder -> [lease, when its next renewal is due]
        self._sightings: dict[str, tuple[str, Any, float]] = {}  # key -> (holder, expires, when first seen: monotonic)
        self._beater: threading.Thread | None = None
        self._pid, self._conn, self._file = -1, None, None
        self._create()

    def _create(self) -> None:
        """Open the file and make its tables where missing; refuse a file that is not a store of this layout."""
        try:
            with self.transaction() as db:  # _same_file() does nothing here: no connection is open yet
                for statement in _SCHEMA.split(";"):  # not executescript(): it would commit midway
                    if statement.strip():
                        db.execute(statement)
                row = db.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
                if row is None:
                    db.execute("INSERT INTO meta VALUES ('format', ?)", (str(FORMAT),))
                elif row[0] != str(FORMAT):
                    raise StoreError(f"store {self.path}: layout {row[0]!r}, this finelogic reads layout {FORMAT} "
                                     "(a newer finelogic wrote it: use that, or another FINELOGIC_CACHE)")
        except sqlite3.DatabaseError as error:
            raise store_error(self.path, error) from None

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    @property
    def _db(self) -> sqlite3.Connection:
        """This process's connection (a forked child opens its own: a SQLite connection must not cross a fork)."""
        if self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)  # its folder may have been removed since
            self._conn = sqlite3.connect(str(self.path), timeout=BUSY_SECONDS, isolation_level=None,
                                         check_same_thread=False)
            deadline = time.monotonic() + BUSY_SECONDS
            while True:  # SQLite answers a journal-mode switch racing another process "locked" at once
                try:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as error:
                    if "locked" not in str(error) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash loses no committed row
            self._pid = os.getpid()
            self._file = _identity(self.path)
        return self._conn

    def _same_file(self) -> None:
        """Reconnect (and make the tables again) when the file was deleted or replaced since it was opened."""
        if self._conn is not None and self._pid == os.getpid() and _identity(self.path) != self._file:
            log.warning("store %s: the file was deleted or replaced; opening it afresh", self.path)
            self._conn.close()
            self._pid, self._conn = -1, None
            self._create()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``), committed when the block ends, rolled back if it raises."""
        with self._lock:
            self._same_file()
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as error:
                raise store_error(self.path, error) from None
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as error:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                if _of_the_file(error):
                    raise store_error(self.path, error) from None
                raise

    @contextlib.contextmanager
    def _file_errors(self) -> Iterator[None]:
        """SQLite's errors about the file (not a statement's) as a :func:`store_error` naming it."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            if not _of_the_file(error):
                raise
            raise store_error(self.path, error) from None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Rows of a read-only query (WAL: never waits for a writer)."""
        with self._lock:
            self._same_file()
            with self._file_errors():
                return self._db.execute(sql, params).fetchall()

    # ------------------------------------------------------------------ model calls
    def get_calls(self, keys: Sequence[str], kind: str, model: str | None = None) -> dict[str, Any]:
        """The stored, valid answers of ``kind`` among ``keys``; a bad row is named, deleted and missing.
        With ``model`` (the keys' model), asking for :data:`SCAN_SHARE` of its answers reads them in one scan."""
        with self._lock:
            self._same_file()
            with self._file_errors():
                return self._get_calls(self._db, keys, kind, model, locked=False)

    def _get_calls(self, db: sqlite3.Connection, keys: Sequence[str], kind: str, model: str | None, *,
                   locked: bool) -> dict[str, Any]:
        """:meth:`get_calls` on ``db``, its caller holding the lock (``locked``: inside its transaction)."""
        wanted = set(keys)
        stored = db.execute("SELECT count(*) FROM calls WHERE model = ? AND kind = ?",
                            (model, kind)).fetchone()[0] if model is not None and len(wanted) > _BATCH else 0
        columns = "key, kind, value, " + ("0" if kind == "hidden_states" else "json_valid(value)")
        grouped: dict[str, Any] = {}
        if stored and len(wanted) >= SCAN_SHARE * stored and kind != "hidden_states":  # blobs: only those asked
            # Every row that SQLite finds to be one JSON text, gathered by it into one array, parsed once.
            (pairs,), = db.execute(f"SELECT json_group_array(json_array(key, json(value))) FROM calls "
                                   f"WHERE model = ? AND kind = ? AND {_WHOLE}", (model, kind))
            grouped = {key: value for key, value in json.loads(pairs) if key in wanted}
            rows = [r for r in db.execute(f"SELECT {columns} FROM calls WHERE model = ? AND kind = ? AND NOT "
                                          f"({_WHOLE})", (model, kind)) if r[0] in wanted]
        else:
            rows = _rows_of(db, f"SELECT {columns} FROM calls", list(wanted))
        errors = {key: BadValue(f"stored as a {stored_kind!r} answer, asked as {kind!r}")
                  for key, stored_kind, _, _ in rows if stored_kind != kind}
        found, wrong = decode_many(kind, [(key, raw, valid) for key, stored_kind, raw, valid in rows
                                          if stored_kind == kind])
        errors.update(wrong)
        if grouped:
            wrong = check_all(kind, grouped)
            errors.update(wrong)
            found.update(grouped if not wrong else {k: v for k, v in grouped.items() if k not in wrong})
        for key, error in errors.items():
            log.warning("store %s: calls row %s (%s) is bad: %s; it is removed and computed again",
                        self.path, key, kind, error)
        if errors:
            with contextlib.nullcontext(db) if locked else self.transaction() as tx:
                tx.executemany("DELETE FROM calls WHERE key = ?", [(k,) for k in errors])
        return found

    def put_call(self, key: str, kind: str, model: str, request: dict[str, Any], value: Any,
                 holder: str | None = None) -> None:
        """Store one answer (kept if the key is stored already) and drop ``holder``'s claim on it, in one write."""
        try:
            raw = encode(kind, value)
        except BadValue as error:
            raise BadValue(f"{model}: the answer to {kind} request {key[:16]}... cannot be stored ({error})") from None
        text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        with self.transaction() as db:
            row = (key, kind, model, text, raw, time.time())
            if not db.execute("INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?, ?)", row).rowcount:
                (stored_kind, stored), = db.execute("SELECT kind, value FROM calls WHERE key = ?", (key,))
                try:  # stored already, by another process: kept, unless it is a bad row (then replaced)
                    if stored_kind != kind:
                        raise BadValue(f"stored as a {stored_kind!r} answer")
                    decode(kind, stored)
                except BadValue as error:
                    log.warning("store %s: calls row %s (%s) is bad: %s; replaced", self.path, key, kind, error)
                    db.execute("REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?)", row)
            if holder is not None:
                db.execute("DELETE FROM claims WHERE key = ? AND holder = ?", (key, holder))

    def finished_generations(self, model: str, below: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """``(request, answer)`` of every stored greedy generation of ``model`` that stopped by itself under a
        token cap smaller than ``below``: what a larger cap would give again. Bad rows are left out."""
        rows = self.query(
            "SELECT request, value FROM calls WHERE model = ? AND kind = 'generate' AND json_valid(request) "
            "AND json_valid(value) AND json_extract(value, '$.finish_reason') = 'stop' "
            "AND json_extract(request, '$.config.temperature') = 0 "
            "AND json_extract(request, '$.config.max_new_tokens') < ?", (model, int(below)))
        found = []
        for request, raw in rows:
            try:
                found.append((json.loads(request), decode("generate", raw)))
            except ValueError:  # a BadValue too
                continue
        return found

    # ------------------------------------------------------------------ claims
    def answer_or_claim(self, keys: Sequence[str], kind: str, holder: str,
                        lease: float = LEASE_SECONDS) -> tuple[dict[str, Any], set[str], list[dict[str, Any]]]:
        """In one transaction: ``(answers, ours, others)``, the stored answers among ``keys``, the rest now
        claimed by ``holder``, and ``{key, pid, host, expires}`` per key another live holder is computing. Another
        holder's claim lapses at the expiry it wrote, and at the latest ``lease`` seconds (this host's clock) after
        this process first saw it so: a peer whose clock is ahead, or that wrote a longer lease, delays this one
        by at most ``lease``; its renewal is a new expiry, seen afresh."""
        now, mine, clock = time.time(), os.getpid(), time.monotonic()
        ours: set[str] = set()
        others: list[dict[str, Any]] = []
        expired: dict[tuple[Any, Any], int] = {}
        with self.transaction() as db:
            answers = self._get_calls(db, keys, kind, None, locked=True)
            missing = [k for k in dict.fromkeys(keys) if k not in answers]
            for key in answers.keys() & self._sightings.keys():
                del self._sightings[key]
            claims = _rows_of(db, "SELECT key, holder, pid, host, started, expires FROM claims", missing)
            held = {row[0]: row[1:] for row in claims}
            for key in missing:
                if key in held:
                    who, pid, host, started, expires = held[key]
                    if not (isinstance(who, str) and isinstance(pid, int) and isinstance(host, str)
                            and isinstance(started, str) and isinstance(expires, (int, float))):
                        log.warning("store %s: claims row %s is damaged (holder %s, pid %s, expires %s); taken over",
                                    self.path, key, _short(who), _short(pid), _short(expires))
                    elif who != holder:
                        dead = host == _HOST and not alive(pid, started)
                        seen = self._sightings.get(key)
                        if seen is None or seen[:2] != (who, expires):
                            seen = self._sightings[key] = (who, expires, clock)
                        ends = min(float(expires), now + seen[2] + lease - clock)
                        if ends > now and not dead:
                            others.append({"key": key, "pid": pid, "host": host, "expires": ends})
                            continue
                        expired[(pid, host)] = expired.get((pid, host), 0) + 1
                ours.add(key)
                self._sightings.pop(key, None)
            db.executemany("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?)",
                           [(k, holder, mine, _HOST, start_time(mine), now + lease) for k in ours])
        for (pid, host), count in expired.items():
            log.warning("store %s: taking over %d request(s) claimed by process %s on %s, which died or stopped "
                        "renewing its lease", self.path, count, pid, host)
        return answers, ours, others

    def release(self, keys: Sequence[str], holder: str) -> None:
        """Drop ``holder``'s claims on ``keys`` (answered, not kept, or given up on an error)."""
        with self.transaction() as db:
            db.executemany("DELETE FROM claims WHERE key = ? AND holder = ?", [(k, holder) for k in keys])

    @contextlib.contextmanager
    def heartbeat(self, holder: str, lease: float = LEASE_SECONDS) -> Iterator[None]:
        """Renew ``holder``'s claims every third of the lease while the block runs (one thread per store)."""
        with self._beats:
            self._holders[holder] = [lease, time.monotonic() + lease / 3]
            if self._beater is None or not self._beater.is_alive():
                self._beater = threading.Thread(target=self._beat, name=f"finelogic-store-lease {self.path.name}",
                                                daemon=True)
                self._beater.start()
            self._beats.notify()
        try:
            yield
        finally:
            with self._beats:
                self._holders.pop(holder, None)

    def _beat(self) -> None:
        """The renewing thread: sleeps until the next holder is due, renews it, forever (a daemon)."""
        while True:
            with self._beats:
                now = time.monotonic()
                due = [h for h, (_, at) in self._holders.items() if at <= now]
                for holder in due:
                    lease = self._holders[holder][0]
                    self._holders[holder][1] = now + lease / 3
                if not due:
                    nearest = min((at for _, at in self._holders.values()), default=now + 60.0)
                    self._beats.wait(timeout=max(nearest - now, 0.01))
                    continue
                leases = {h: self._holders[h][0] for h in due}
            for holder, lease in leases.items():
                try:
                    with self.transaction() as db:
                        db.execute("UPDATE claims SET expires = ? WHERE holder = ?", (time.time() + lease, holder))
                except (sqlite3.Error, StoreError) as error:  # the next beat tries again; the claim may lapse meanwhile
                    log.warning("store %s: could not renew the claims of %s (%s)", self.path, holder, error)

    # ------------------------------------------------------------------ memos
    def memo_items(self, memo: str, version: str, check: Callable[[Any], str | None] | None = None) -> dict[str, Any]:
        """Every valid value of memo ``memo`` at ``version``: one JSON value each, of which ``check`` (the memo's
        type, as :data:`_PROBLEM` for answers) finds nothing wrong; a bad row is named, deleted and left out."""
        rows = self.query("SELECT key, value, json_valid(value) FROM memos WHERE memo = ? AND version = ?",
                          (memo, version))
        items, errors = decode_many("json", rows)
        if check is not None:
            for key, why in [(key, check(value)) for key, value in items.items()]:
                if why is not None:
                    errors[key] = BadValue(why)
                    del items[key]
        for key, error in errors.items():
            log.warning("store %s: memos row %s of %s is bad: %s; it is removed and computed again",
                        self.path, key, memo, error)
        if errors:
            with self.transaction() as db:
                db.executemany("DELETE FROM memos WHERE memo = ? AND version = ? AND key = ?",
                               [(memo, version, k) for k in errors])
        return items

    def put_memos(self, memo: str, version: str, items: dict[str, Any]) -> None:
        """Store memo results in one transaction (a key stored already keeps its value)."""
        rows = [(memo, version, k, json.dumps(v, ensure_ascii=False), time.time()) for k, v in items.items()]
        with self.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO memos VALUES (?, ?, ?, ?, ?)", rows)

    # ------------------------------------------------------------------ generated sets
    def get_dataset(self, key: str) -> list[dict[str, Any]] | None:
        """The records of the generated set stored under ``key``; None when there is none or its row is bad
        (another sha256 or line count than written, a line not one JSON object: named and deleted)."""
        rows = self.query("SELECT name, problems, count, sha256 FROM datasets WHERE key = ?", (key,))
        if not rows:
            return None
        name, text, count, digest = rows[0]
        try:
            if type(text) is not str:
                raise BadValue(f"a {type(text).__name__} where JSON lines were expected")
            if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
                raise BadValue("its text is not the one stored (sha256 differs: edited or cut?)")
            lines = text.splitlines()
            if len(lines) != count:
                raise BadValue(f"{len(lines)} lines where {count} were stored")
            records = [decode("json", line) for line in lines]
            if not all(type(r) is dict for r in records):
                raise BadValue("a line that is not a JSON object")
            return records
        except BadValue as error:
            self.drop_dataset(key, f"{name}: {error}")
            return None

    def drop_dataset(self, key: str, why: str) -> None:
        """Delete a bad generated set's row, saying why (it is made again)."""
        log.warning("store %s: datasets row %s (%s) is bad; it is removed and made again", self.path, key, why)
        with self.transaction() as db:
            db.execute("DELETE FROM datasets WHERE key = ?", (key,))

    def put_dataset(self, key: str, name: str, lines: Sequence[str]) -> None:
        """Store a generated set as its records' JSON lines, with their count and sha256, in one transaction."""
        text = "".join(line + "\n" for line in lines)
        with self.transaction() as db:
            db.execute("REPLACE INTO datasets VALUES (?, ?, ?, ?, ?, ?)",
                       (key, name, text, len(lines), hashlib.sha256(text.encode("utf-8")).hexdigest(), time.time()))

    # ------------------------------------------------------------------ inspection
    def summary(self) -> list[tuple[str, str, str, int]]:
        """Rows per table and kind: ``(table, kind or memo, model or version, rows)``, for a look inside."""
        calls = self.query("SELECT 'calls', kind, model, count(*) FROM calls GROUP BY kind, model ORDER BY 2, 3")
        memos = self.query("SELECT 'memos', memo, substr(version, 1, 16), count(*) FROM memos "
                           "GROUP BY memo, version ORDER BY 2, 3")
        sets = self.query("SELECT 'datasets', name, '', count(*) FROM datasets GROUP BY name ORDER BY 2")
        claims = self.query("SELECT 'claims', '', '', count(*) FROM claims")
        return calls + memos + sets + claims


_OPEN: dict[tuple[str, int], Store] = {}
_OPEN_LOCK = threading.Lock()


def open_store(path: str | os.PathLike) -> Store:
    """The process's one :class:`Store` for ``path`` (opened once per process and file)."""
    key = (str(Path(path).resolve()), os.getpid())  # a forked child opens its own connection
    with _OPEN_LOCK:
        if key not in _OPEN:
            _OPEN[key] = Store(path)
        return _OPEN[key]


# ---------------------------------------------------------------------------------------------- keys
def canonical_key(request: Any) -> str:
    """sha256 of the canonical JSON of ``request`` (keys sorted, no spaces, UTF-8): a call's key."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
