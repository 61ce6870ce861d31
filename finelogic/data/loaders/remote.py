"""The published benchmark files, fetched when online: each pinned file downloaded once at its commit into
``$FINELOGIC_CACHE/data/`` in the published layout, SHA-256 checked, then read like a local copy."""
from __future__ import annotations

import hashlib
import logging
import os
import socket
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from finelogic.config import cache_dir
from finelogic.files import write_bytes_atomic

log = logging.getLogger("finelogic.data.loaders")

#: The Hugging Face variables that also mean "offline" here.
OFFLINE_ENV_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


@dataclass(frozen=True)
class RemoteFile:
    """One published file: where it lives in the published layout, and its pinned bytes' SHA-256."""

    path: str
    sha256: str


@dataclass(frozen=True)
class Source:
    """A dataset's public home: GitHub ``repo`` at the full ``commit`` hash; ``prefix`` is the files' folder
    there, replaced locally by the dataset's folder; ``licence`` the one the repository states."""

    repo: str
    commit: str
    prefix: str
    files: tuple[RemoteFile, ...]
    licence: str

    def url(self, file: RemoteFile) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.prefix}{file.path}"

    @staticmethod
    def local(root: Path, name: str, file: RemoteFile) -> Path:
        return root / name / file.path

    @property
    def home(self) -> str:
        return f"github.com/{self.repo}@{self.commit[:8]}"


class FetchError(OSError):
    """A pinned file could not be fetched, or its bytes are not the pinned ones (the message says which)."""


def env_offline() -> bool | None:
    """True with ``FINELOGIC_OFFLINE=1`` or ``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` set, False with
    ``FINELOGIC_OFFLINE=0``, None (probe the network) otherwise."""
    value = os.environ.get("FINELOGIC_OFFLINE", "").strip().lower()
    if value in ("0", "false", "no"):
        return False
    if value:
        return True
    return any(os.environ.get(v, "").strip().lower() not in ("", "0", "false", "no")
               for v in OFFLINE_ENV_VARS) or None


_probed: dict[str, bool] = {}
_said_offline = False


def network_allowed(host: str = "raw.githubusercontent.com") -> bool:
    """Whether to fetch from ``host`` now: as :func:`env_offline` decides, otherwise when a TCP connection to
    it opens within a few seconds (probed once per host and process)."""
    decided = env_offline()
    if decided is not None:
        return not decided
    if host not in _probed:
        try:
            socket.create_connection((host, 443), timeout=3.0).close()
            _probed[host] = True
        except OSError:
            _probed[host] = False
    return _probed[host]


def download(url: str) -> bytes:
    """The bytes at ``url`` (the default opener)."""
    with urllib.request.urlopen(url, timeout=60.0) as response:  # noqa: S310 (https, pinned)
        return response.read()


def fetch(name: str, source: Source, root: str | os.PathLike | None = None, *,
          opener: Callable[[str], bytes] = download) -> Path:
    """Download dataset ``name``'s pinned files into the data root ``root`` (default ``$FINELOGIC_CACHE/data``)
    and return it; files already there with the pinned SHA-256 are kept; ``opener`` may read from a mirror."""
    root = Path(root) if root is not None else cache_dir() / "data"
    for file in source.files:
        target = source.local(root, name, file)
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == file.sha256:
            continue
        url = source.url(file)
        try:
            data = opener(url)
        except OSError as error:
            raise FetchError(f"{name}: could not fetch {url}: {error}") from error
        digest = hashlib.sha256(data).hexdigest()
        if digest != file.sha256:
            raise FetchError(f"{name}: {url} has SHA-256 {digest}, expected {file.sha256} (pinned at "
                             f"{source.home}); not kept")
        write_bytes_atomic(target, data)
        log.info("fetched %s -> %s", url, target)
    return root


def fetched_root(name: str, source: Source) -> Path | None:
    """The data root holding dataset ``name``'s pinned files, fetched when allowed; None offline or on failure."""
    global _said_offline
    root = cache_dir() / "data"
    if all(source.local(root, name, f).is_file() for f in source.files):
        return fetch(name, source, root)  # checks the hashes, reads nothing new
    if not network_allowed():
        if not _said_offline:
            reason = ("no connection to raw.githubusercontent.com" if env_offline() is None
                      else "FINELOGIC_OFFLINE or HF_*_OFFLINE is set")
            log.warning("offline (%s): the published FOLIO, Multi-LogiEval and ProntoQA files are not fetched; "
                        "pages use the labelled stand-ins (set FINELOGIC_DATA_DIR to local copies)", reason)
            _said_offline = True
        return None
    try:
        return fetch(name, source, root)
    except FetchError as error:
        log.warning("%s; using stand-ins", error)
        return None
