"""Where things live: the cache, the results, the real data. Environment variables override defaults."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator


class EnvironmentSettingError(ValueError):
    """An environment variable set to something finelogic cannot use; the message names the variable."""


def folder_setting(name: str, default: Path) -> Path:
    """The folder environment variable ``name`` names, or ``default`` when it is unset; set but empty or
    padded with spaces is an error naming the variable (``Path("")`` would be the working folder)."""
    value = os.environ.get(name)
    if value is None:
        return default
    if not value.strip():
        raise EnvironmentSettingError(f"{name} is set but empty; unset it (default {default}) or name a folder")
    if value != value.strip():
        raise EnvironmentSettingError(f"{name}={value!r} starts or ends with whitespace; write the folder without it")
    return Path(value).expanduser()


def cache_dir() -> Path:
    """``$FINELOGIC_CACHE`` or ``~/.cache/finelogic``; created on first use."""
    path = folder_setting("FINELOGIC_CACHE", Path.home() / ".cache" / "finelogic")
    path.mkdir(parents=True, exist_ok=True)
    return path


#: The file name of the one store of model calls and memos (:mod:`finelogic.store`).
STORE_FILE = "store.sqlite"


def store_path() -> Path:
    """The one store of model calls and memos, ``$FINELOGIC_CACHE/store.sqlite`` (:mod:`finelogic.store`)."""
    return cache_dir() / STORE_FILE


def data_dir() -> Path | None:
    """``$FINELOGIC_DATA_DIR`` when set (the real benchmark files), else None."""
    value = os.environ.get("FINELOGIC_DATA_DIR")
    return Path(value).expanduser() if value else None


def repo_root() -> Path:
    """The repository root when running from a checkout (notebooks/, book/ beside the package)."""
    return Path(__file__).resolve().parent.parent


def notebooks_dir() -> Path:
    """The parameterized notebooks (``notebooks/``)."""
    return repo_root() / "notebooks"


def book_output_dir() -> Path:
    """Where executed notebooks land for the book (``book/generated``)."""
    return repo_root() / "book" / "generated"


def results_dir(profile: str) -> Path:
    """``$FINELOGIC_RESULTS`` or ``<repo>/results``, then ``/<profile>``; created on first use."""
    base = folder_setting("FINELOGIC_RESULTS", repo_root() / "results")
    path = base / profile
    path.mkdir(parents=True, exist_ok=True)
    return path


#: The user part of a URL: up to the last ``@`` before the path, so a password with an unencoded ``@`` is taken whole.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s'\"<>]*)@")
#: A query parameter that holds a credential: key, token, secret, password, sig(nature), auth or credential(s),
#: alone or after ``api`` or a prefix ending in ``_``/``-`` (api_key, apikey, access_token, x-api-key).
_SECRET_QUERY = re.compile(r"(?i)([?&](?:[A-Za-z0-9._-]*[_-])?(?:api)?(?:key|token|secret|password|passwd|pwd|sig|"
                           r"signature|auth|credentials?)=)[^&#\s'\"<>,]*")
#: Where the runner hands a notebook's kernel the URLs whose credentials its parameters show as ``***``
#: (space-separated); :func:`finelogic.models.openai_backend.server_url` completes such a URL from it.
SERVER_URLS_ENV = "FINELOGIC_SERVER_URLS"


def redact_url(text: str | None) -> str | None:
    """``text`` (a URL, a model spec, a log line) with the credentials of every URL in it shown as ``***``,
    wherever a URL is shown or stored: the password of its user part (``http://user:KEY@host/v1`` ->
    ``http://user:***@host/v1``; ``http://user:p@ss@host`` -> ``http://user:***@host``), a user part without
    one whole (``http://KEY@host`` -> ``http://***@host``), and the value of a query parameter that names a
    credential (``?api_key=KEY`` -> ``?api_key=***``; also key, token, access_token, secret, password, sig)."""
    if not text:
        return text
    text = _USERINFO.sub(lambda m: m.group(1) + (m.group(2).split(":", 1)[0] + ":***" if ":" in m.group(2)
                                                 else "***") + "@", text)
    return _SECRET_QUERY.sub(r"\1***", text)


def credential_urls(data: Any) -> list[str]:
    """Every URL with credentials (:func:`redact_url` changes it) in the strings of ``data`` (dicts, lists,
    strings), also cut at each comma after it, as a comma-separated list of model specs is read."""
    if isinstance(data, dict):
        return credential_urls(list(data.values()))
    if isinstance(data, (list, tuple)):
        return list(dict.fromkeys(url for value in data for url in credential_urls(value)))
    if not isinstance(data, str):
        return []
    found = []
    for extent in re.findall(r"(?<![A-Za-z0-9+.-])(?=([A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*))", data):
        parts = extent.split(",")
        found += [",".join(parts[:end]) for end in range(1, len(parts) + 1)]
    return list(dict.fromkeys(url for url in found if redact_url(url) != url))


def body_digest(extra_body: Any) -> str:
    """``sha256:<16 hex>`` of a server's ``extra_body``: what a model's identity and a run's provenance record
    instead of values that may hold a key."""
    return "sha256:" + hashlib.sha256(json.dumps(extra_body, sort_keys=True, default=str).encode()).hexdigest()[:16]


def scrub_secrets(data: Any) -> Any:
    """Plain settings data with what may be secret taken out, for provenance: every ``extra_body`` mapping as
    its :func:`body_digest`, every string :func:`redact_url`-ed."""
    if isinstance(data, dict):
        return {k: body_digest(v) if k == "extra_body" and isinstance(v, dict) else scrub_secrets(v)
                for k, v in data.items()}
    if isinstance(data, list):
        return [scrub_secrets(v) for v in data]
    if isinstance(data, str):
        return redact_url(data)
    return data


def safe_name(text: str) -> str:
    """A file-name stem made from any text: characters other than letters, digits, ``.``, ``_``, ``-`` become
    ``_`` and no leading dot (``meta-llama/Llama-3.1-8B`` -> ``meta-llama_Llama-3.1-8B``; ``../x`` can never
    leave its folder)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_").lstrip("._")
    if not name:
        raise ValueError(f"{text!r} has no characters usable in a file name")
    return name


@contextlib.contextmanager
def environment(**values: Any) -> Iterator[None]:
    """Set environment variables (as strings) while the block runs, then restore each, also when it raises."""
    previous = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items()})
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
