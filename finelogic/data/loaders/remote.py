"""The published benchmark files fetched from their public homes, pinned and checked, when online.

When ``$FINELOGIC_DATA_DIR`` is not set, :func:`finelogic.data.loaders.load_dataset` asks
:func:`fetched_root` for FOLIO, Multi-LogiEval and ProntoQA: each file is downloaded once from its
repository at a pinned commit into ``$FINELOGIC_CACHE/data/`` in the published layout, its SHA-256 checked
against the value pinned here, and then read by the same loaders as a local copy. FLD and LogicMark come
from the Hugging Face hub through ``datasets`` (:func:`finelogic.data.loaders.files.from_hub`).

Whether to go online (:func:`network_allowed`):

- ``FINELOGIC_OFFLINE=1``, or ``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` set: never;
- ``FINELOGIC_OFFLINE=0``: always, without probing;
- otherwise: when a TCP connection to the host opens within a few seconds (probed once per process).

Offline, the first request logs one warning and the callers fall back to the labelled stand-ins
(:mod:`finelogic.data.suites`). Nothing is fetched at import time.
"""
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

RAW = "https://raw.githubusercontent.com"
#: The Hugging Face variables that also mean "offline" here.
OFFLINE_ENV_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
PROBE_TIMEOUT_S = 3.0
DOWNLOAD_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RemoteFile:
    """One published file: where it lives in the published layout, and its pinned bytes' SHA-256."""

    path: str
    sha256: str


@dataclass(frozen=True)
class Source:
    """A dataset's public home at a pinned commit.

    Attributes:
        repo: ``owner/name`` on GitHub.
        commit: the full commit hash the files are pinned to.
        folder: the dataset's folder in the published layout (``folio``, ``multi_logieval``, ...).
        prefix: the files' folder inside the repository, replaced by ``folder`` locally.
        files: the files, with paths relative to ``prefix`` and their SHA-256.
        licence: the licence the repository states, for the user's information.
    """

    repo: str
    commit: str
    folder: str
    prefix: str
    files: tuple[RemoteFile, ...]
    licence: str

    def url(self, file: RemoteFile) -> str:
        return f"{RAW}/{self.repo}/{self.commit}/{self.prefix}{file.path}"

    def local(self, root: Path, file: RemoteFile) -> Path:
        return root / self.folder / file.path

    @property
    def home(self) -> str:
        return f"github.com/{self.repo}@{self.commit[:8]}"


_MULTI_LOGIEVAL = (
    ("data/d4_Data/fol/BD_C_DS_MP.json", "2f298067f4941ebc14ce5fe3961fb5586a9ad89a3cdd7e1aa9a968ffea9df4b5"),
    ("data/d4_Data/fol/BD_DS_MT_DS.json", "e73b284618d1c62f1f66406beec3301449da578e52850b186949402dee2e743f"),
    ("data/d4_Data/fol/BD_DS_MT_MT.json", "1628e0a90e25aba320be4b2fc9764f40b2d67cdb731388e024b7f7bfc30c2562"),
    ("data/d4_Data/fol/CD_C_DS_MP.json", "a945d89853f0afcd41ed2968eb418352bf2c2ac231f330c2c752b38f772cdf84"),
    ("data/d4_Data/fol/CD_DS_MP_MP.json", "e022212239772e8bb91acaf0778afa2a98fec67d1ca0b1894a2961c9092bf3c3"),
    ("data/d4_Data/fol/HS_CD_DS_MP.json", "ba3bce89d8ecd82d405fc3825cb6bd5662908d7413e34f6dc35611a776f386a4"),
    ("data/d4_Data/fol/HS_MT_DS_MP.json", "fa68046e6203afb385c769a9d3471cdb3fc09ecd1d78b01d5d126f94678ab20e"),
    ("data/d4_Data/fol/I_MT_DMT_DS.json", "7154f4d5902f55e28faceea27aa023ea79a50450cb329909f4f15d19af33b22a"),
    ("data/d4_Data/nm/d4_1.json", "1b09197bc8d783f0acc679930e37b2d5d10ca4405d32d8e0d81d409bff71f46a"),
    ("data/d4_Data/nm/d4_2.json", "1b8643d44df7a2475f8620de53e0ca9a26ba5142444eebb025c377a223040789"),
    ("data/d4_Data/pl/BD_C_DS_MP.json", "b0c7555445336612eacf7e856b5954d4abe1eaf1afcd835863fb118c080e9d3e"),
    ("data/d4_Data/pl/BD_DS_MT_DS.json", "1778fbd78ba17cb9b1ea16138efeb89654c9dd57ba1b889d4ec0bfff756e2ab5"),
    ("data/d4_Data/pl/BD_DS_MT_MT.json", "0c82efe51193390e447d413119735f2af1f3dbbcd0dc7adaf3bd8cfe5bb4e438"),
    ("data/d4_Data/pl/CD_C_DS_MP.json", "94a4f393991bd69886d4be16e40b35e38da72d1192768a59d92381af826061fc"),
    ("data/d4_Data/pl/CD_DS_MP_MP.json", "59a9574c9c810c2e31533168b4b2d727db6731101729ef79ee2686a5017fb674"),
    ("data/d4_Data/pl/HS_CD_DS_MP.json", "c5dc391935e04dc7b448c0c17b4cd7d258e96ab20875744b9f00553fc62ddef1"),
    ("data/d4_Data/pl/HS_MT_DS_MP.json", "94f4cfe5ce7af3b9218877d1a53e23ea707741ebbdcd610ddcb4b269a4f0e6ed"),
    ("data/d4_Data/pl/I_MT_DMT_DS.json", "09013b6376301317b21c55d94fe290a59c83cfe209f74222aba2f71c859b3d84"),
    ("data/d5_Data/fol/BD_C_DS_MP_MP.json", "e23e1ed1c7b525e5b7d064e87d0ed28a26f383b67b4ee48dd571179084fe8e09"),
    ("data/d5_Data/fol/CD_C_DS_MP_MP.json", "52302340cf0111cb7c1bf8e85caa4073f564c30617fa19f036f3fde58243fdd9"),
    ("data/d5_Data/fol/HS_MT_DS_MP_MP.json", "1fc76322a8c54a182933759b858b37f482c9b9d07b131f0d5df6ba5364a68069"),
    ("data/d5_Data/nm/d5_1.json", "278d127eb5fc95e3075d743b37241b98bb569a9ab8d4e6958aed2fa58c745256"),
    ("data/d5_Data/pl/BD_C_DS_MP_MP.json", "77aa8db1ab0a992d44972258fe935a22eb5bab67a3051ab173ddcebd6950cd06"),
    ("data/d5_Data/pl/CD_C_DS_MP_MP.json", "783a0f26ffcb4eefedf20bf896e515c4ab6993772566484d9de940126cd3e31a"),
    ("data/d5_Data/pl/HS_MT_DS_MP_MP.json", "bc14ab3cb8a31ebaf4a2038ce2b5e67e6a72c5df3d9e719183b0c9117dc6b36b"),
)

# The files the paper evaluated on (FOLIO validation, Multi-LogiEval d4 + d5, ProntoQA's 500-item 5-hop
# dev set as Logic-LM publishes it), each pinned to the commit and bytes checked when this was written.
SOURCES: dict[str, Source] = {
    "folio": Source(
        "Yale-LILY/FOLIO", "5d7bb84c7edab3fb358e057d2807f19cf5cf5e2d", "folio", "data/v0.0/",
        (RemoteFile("folio-validation.jsonl", "6922c988ef10987bd6545568ee8e63e897af80994591fa20539767da58f8e3d1"),),
        "CC-BY-SA-4.0"),
    "multi_logieval": Source(
        "Mihir3009/Multi-LogiEval", "6d55ade5dfcc35e1382bf62335df3a061bc4c781", "multi_logieval", "",
        tuple(RemoteFile(path, sha) for path, sha in _MULTI_LOGIEVAL), "MIT"),
    "prontoqa": Source(
        "teacherpeterpan/Logic-LLM", "d29f1e5e7203e8826cb9c41ba3003e43dc0b9d34", "prontoqa", "data/ProntoQA/",
        (RemoteFile("dev.json", "2d2e9d0adbef05cd66b51d11516b8fb3d3fb2cbc1664867d1123a000f7b11a5f"),),
        "MIT (Logic-LLM); the ProntoQA generator is Apache-2.0"),
}

Opener = Callable[[str], bytes]


class FetchError(OSError):
    """A pinned file could not be fetched, or its bytes are not the pinned ones (the message says which)."""


def env_offline() -> bool | None:
    """True/False when the environment decides, None when the network should be probed."""
    value = os.environ.get("FINELOGIC_OFFLINE", "").strip().lower()
    if value in ("0", "false", "no"):
        return False
    if value not in ("",):
        return True
    return any(os.environ.get(v, "").strip().lower() not in ("", "0", "false", "no")
               for v in OFFLINE_ENV_VARS) or None


_probed: dict[str, bool] = {}
_said_offline = False


def network_allowed(host: str = "raw.githubusercontent.com") -> bool:
    """Whether to fetch from ``host`` now (module docstring); the probe runs once per host and process."""
    decided = env_offline()
    if decided is not None:
        return not decided
    if host not in _probed:
        try:
            socket.create_connection((host, 443), timeout=PROBE_TIMEOUT_S).close()
            _probed[host] = True
        except OSError:
            _probed[host] = False
    return _probed[host]


def _say_offline_once(reason: str) -> None:
    global _said_offline
    if not _said_offline:
        log.warning("offline (%s): the published FOLIO, Multi-LogiEval and ProntoQA files are not fetched; "
                    "pages use the labelled stand-ins (set FINELOGIC_DATA_DIR to local copies)", reason)
        _said_offline = True


def download(url: str) -> bytes:
    """The bytes at ``url`` (the default opener)."""
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310 (https, pinned)
        return response.read()


def fetch(name: str, root: str | os.PathLike | None = None, *, opener: Opener = download) -> Path:
    """Download ``name``'s pinned files into ``root`` (default ``$FINELOGIC_CACHE/data``), checking each.

    Files already there with the pinned SHA-256 are kept (a second call reads nothing). A file whose
    bytes differ from the pinned ones is an error naming the file and both hashes, and is not kept.

    Args:
        name: a key of :data:`SOURCES`.
        root: the data root to fill, in the published layout.
        opener: ``url -> bytes``; hand in another to read from a mirror.

    Returns:
        The data root (pass it to ``load_dataset(name, root)``).

    Raises:
        FetchError: a download failed or a file's bytes differ from the pinned ones.
    """
    if name not in SOURCES:
        raise ValueError(f"no public home pinned for {name!r}; pinned: {', '.join(SOURCES)}")
    source = SOURCES[name]
    root = Path(root) if root is not None else cache_dir() / "data"
    for file in source.files:
        target = source.local(root, file)
        if target.is_file() and _sha256(target.read_bytes()) == file.sha256:
            continue
        url = source.url(file)
        try:
            data = opener(url)
        except OSError as error:
            raise FetchError(f"{name}: could not fetch {url}: {error}") from error
        digest = _sha256(data)
        if digest != file.sha256:
            raise FetchError(f"{name}: {url} has SHA-256 {digest}, expected {file.sha256} (pinned at "
                             f"{source.home}); not kept")
        write_bytes_atomic(target, data)
        log.info("fetched %s -> %s", url, target)
    return root


def fetched_root(name: str, *, opener: Opener = download) -> Path | None:
    """The data root holding ``name``'s pinned files, fetching them when allowed; None when offline or
    when the fetch fails (logged)."""
    if name not in SOURCES:
        return None
    root = cache_dir() / "data"
    source = SOURCES[name]
    if all(source.local(root, f).is_file() for f in source.files):
        return fetch(name, root, opener=opener)  # checks the hashes, reads nothing new
    if not network_allowed():
        _say_offline_once("no connection to raw.githubusercontent.com" if env_offline() is None
                          else "FINELOGIC_OFFLINE or HF_*_OFFLINE is set")
        return None
    try:
        return fetch(name, root, opener=opener)
    except FetchError as error:
        log.warning("%s; using stand-ins", error)
        return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
