"""The one cache of model calls: every verb of every backend, keyed by model identity + request.

Answers are rows of the store (:mod:`finelogic.store`), each stored as it finishes, keyed by the sha256 of
the model's identity (a served model's with its server's URL, never credentials), the verb and the request.
Processes sharing the store claim the missing requests chunk by chunk, so none sends a request another is
answering or has answered; a claim whose lease lapsed is taken over.
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import time
import uuid
from typing import Any, Callable, Sequence

import numpy as np

from finelogic.models.base import (BackendStats, backend_template, Completion, Conversation, GenerationConfig,
                                   LoglikelihoodResult, StatesRequest, hidden_states_of, template_of)
from finelogic.store import LEASE_SECONDS, Store, canonical_key, open_store

log = logging.getLogger(__name__)
#: How often a process waiting for requests another process has claimed looks for their answers.
CLAIM_POLL_SECONDS = 0.5


#: sha256 of the canonical JSON of everything that determines the answer (the store's one key function).
request_key = canonical_key


def _loglikelihood_keys(model_id: str, pairs: Sequence[tuple[str, str]]) -> list[str]:
    """:func:`request_key` of each ``loglikelihood`` request, its canonical JSON written directly with each
    distinct text encoded once (a context is shared by all its options)."""
    encoded: dict[str, str] = {}

    def text(value: str) -> str:
        if value not in encoded:
            encoded[value] = json.dumps(value, ensure_ascii=False)
        return encoded[value]

    model = json.dumps(model_id, ensure_ascii=False)
    return [hashlib.sha256(f'{{"context":{text(c)},"continuation":{text(x)},"kind":"loglikelihood","model":{model}}}'
                           .encode("utf-8")).hexdigest() for c, x in pairs]


class CachedBackend:
    """Any backend behind the cache: same verbs, answered from the store where the request was seen before.

    ``backend`` may be a zero-argument callable that opens it when some request is not cached, ``tokenizer``
    one that gives the model's tokenizer without the weights. ``model_id`` is the model's identity in every
    key: two different models must never share one. ``chunk_size`` misses go to the backend per call; a claim
    holds ``lease_seconds`` without renewal (the longest a stopped process delays another). Sampling is
    cached only with a seed; empty completions are never stored; a greedy request is answered by a stored one
    under a smaller cap that ended by itself. ``stats`` adds ``cache_hits`` to what the backend counted.
    """

    def __init__(self, backend: Any, store: Store | str | os.PathLike, model_id: str, *, chunk_size: int = 32,
                 tokenizer: Callable[[], Any] | None = None, lease_seconds: float = LEASE_SECONDS) -> None:
        loader = callable(backend) and not hasattr(backend, "generate") and not hasattr(backend, "loglikelihood")
        self._backend = None if loader else backend
        self._load = backend if self._backend is None else None
        self._tokenizer_loader, self._tokenizer = tokenizer, None
        self.store = store if isinstance(store, Store) else open_store(store)
        self.model_id = model_id
        self.chunk_size = chunk_size
        self.lease_seconds = lease_seconds
        self.stats = BackendStats()
        self._shorter: dict[int, dict[str, dict[str, Any]]] = {}  # cap -> answers that ended under a smaller one

    @property
    def backend(self) -> Any:
        """The wrapped backend (opened on first use when a loader was given)."""
        if self._backend is None:
            log.info("opening %s (not everything it is asked is cached)", self.model_id)
            self._backend = self._load()
        return self._backend

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def release(self) -> None:
        """Let go of a model opened from a loader (its weights, on the GPU too); a later miss opens it again.
        A backend handed in ready is the caller's and is kept."""
        if self._load is None or self._backend is None:
            return
        close = getattr(self._backend, "close", None)
        if callable(close):
            close()
        self._backend = None
        import gc
        import sys

        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()

    @property
    def tokenizer(self) -> Any:
        """The loaded backend's tokenizer, else one read without loading the weights."""
        if self._backend is not None or self._tokenizer_loader is None:
            return getattr(self.backend, "tokenizer", None)
        if self._tokenizer is None:
            self._tokenizer = self._tokenizer_loader()
        return self._tokenizer

    @property
    def template(self) -> str:
        """How conversations reach the model (``"chat"`` or ``"completion"``), read off the tokenizer where one
        is read without the weights, else asked of the backend."""
        if self._backend is None and self._tokenizer_loader is not None and self.tokenizer is not None:
            return template_of(self.tokenizer)
        return backend_template(self.backend)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.backend, name)

    def __repr__(self) -> str:
        return f"CachedBackend({self.model_id!r}, {str(self.store.path)!r})"

    # ------------------------------------------------------------------ verbs
    def generate(self, conversations: Sequence[Conversation],
                 config: GenerationConfig = GenerationConfig()) -> list[Completion]:
        """As the wrapped backend's ``generate``, answering cached conversations from the store."""
        cacheable = config.greedy or config.seed is not None
        settings = config.as_dict()  # once per call, not per request
        requests = [{"kind": "generate", "model": self.model_id, "messages": [dict(m) for m in c],
                     "config": dict(settings)} for c in conversations]

        def run(todo: list[int], store: Callable[[int, Any], None]) -> list[Any]:
            chosen = [conversations[i] for i in todo]
            if _takes_on_result(self.backend.generate):
                texts = self.backend.generate(chosen, config,
                                              on_result=lambda j, text: store(todo[j], self._text_record(text)))
            else:
                texts = self.backend.generate(chosen, config)
            return [self._text_record(t) for t in texts]

        reuse = self._finished_within_smaller_cap if cacheable and config.greedy else None
        answers = self._answer("generate", requests, cacheable, run, reuse=reuse)
        return [Completion(a["text"], a.get("finish_reason")) for a in answers]

    def _finished_within_smaller_cap(self, requests: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
        """Answers to greedy ``requests`` (by position) stored under a smaller token cap, equal in all else,
        that ended by themselves there: greedy decoding writes the same tokens whatever the cap."""
        cap = int(requests[0]["config"]["max_new_tokens"])
        if cap not in self._shorter:  # one scan per cap per wrapper
            self._shorter[cap] = {_capless_key(request): answer
                                  for request, answer in self.store.finished_generations(self.model_id, cap)}
        finished = self._shorter[cap]
        if not finished:
            return {}
        found = {i: answer for i, request in enumerate(requests)
                 if (answer := finished.get(_capless_key(request))) is not None}
        if found:
            log.info("%s: %d of %d request(s) answered by greedy generations that ended within a smaller token "
                     "cap", self.model_id, len(found), len(requests))
        return found

    def loglikelihood(self, requests: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        """As the wrapped backend's ``loglikelihood``, answering cached pairs from the store."""
        keyed = [{"kind": "loglikelihood", "model": self.model_id, "context": c, "continuation": x}
                 for c, x in requests]

        def run(todo: list[int], store: Callable[[int, Any], None]) -> list[Any]:
            chosen = [requests[i] for i in todo]
            if _takes_on_result(self.backend.loglikelihood):  # each answer stored as it arrives
                scored = self.backend.loglikelihood(chosen, on_result=lambda j, r: store(todo[j], self._scored(r)))
            else:
                scored = self.backend.loglikelihood(chosen)
            return [self._scored(r) for r in scored]

        answers = self._answer("loglikelihood", keyed, True, run, group=lambda i: requests[i][0],
                               keys=_loglikelihood_keys(self.model_id, requests))
        return [(float(a[0]), int(a[1]), bool(a[2])) for a in answers]

    def hidden_states(self, text: str, boundaries: Sequence[int], **kwargs: Any) -> Any:
        """As the wrapped backend's ``hidden_states``; the arrays are stored as ``.npz`` blobs."""
        return self.hidden_states_batch([StatesRequest(text, boundaries, kwargs)])[0]

    def hidden_states_batch(self, requests: Sequence[StatesRequest]) -> list[Any]:
        """As the wrapped backend's ``hidden_states_batch`` (or ``hidden_states``), answering from the store."""
        keyed = [{"kind": "hidden_states", "model": self.model_id, "text": r.text,
                  "boundaries": [int(b) for b in r.boundaries], "options": _jsonable(dict(r.options))}
                 for r in requests]
        return self._answer("hidden_states", keyed, True,
                            lambda todo, _: hidden_states_of(self.backend, [requests[i] for i in todo]))

    # ------------------------------------------------------------------ shared
    def _text_record(self, text: Any) -> dict[str, Any]:
        """A generation as stored; a backend that answers with something other than text is refused."""
        if not isinstance(text, str):
            raise TypeError(f"{self.backend!r} answered a generation with a {type(text).__name__} ({text!r:.60}); "
                            "a text was expected")
        return {"text": str(text), "finish_reason": getattr(text, "finish_reason", None)}

    def _scored(self, result: Any) -> list[Any]:
        """A log-likelihood as stored, ``[logprob, tokens, greedy]`` as Python numbers; anything else is refused."""
        try:
            logprob, tokens, greedy = result
            if isinstance(logprob, (str, bytes)) or isinstance(tokens, (str, bytes, float)) \
                    or not isinstance(greedy, (bool, np.bool_)):
                raise TypeError
            return [float(logprob), int(tokens), bool(greedy)]
        except (TypeError, ValueError):
            raise TypeError(f"{self.backend!r} answered a log-likelihood with {result!r:.80}; "
                            "(logprob, tokens, greedy) was expected") from None

    def _answer(self, kind: str, requests: list[dict], cacheable: bool, run: Callable,
                group: Callable[[int], Any] | None = None, keys: list[str] | None = None,
                reuse: Callable[[list[dict]], dict[int, Any]] | None = None) -> list[Any]:
        """Answers in request order: cached ones from the store, the rest computed chunk by chunk; requests of
        one ``group(i)`` share a chunk (a context's continuations share a KV cache); ``keys``: the requests'
        :func:`request_key` where the caller has them faster; ``reuse(missing)``: stored answers that fit."""
        keys = keys if keys is not None else [request_key(r) for r in requests]
        found = self.store.get_calls(keys, kind, self.model_id) if cacheable else {}
        answers: list[Any] = [found.get(k) for k in keys]
        missing = [i for i, a in enumerate(answers) if a is None]
        if reuse is not None and missing:
            for j, answer in reuse([requests[i] for i in missing]).items():
                i = missing[j]
                self.store.put_call(keys[i], kind, self.model_id, requests[i], answer)
                answers[i] = answer
            missing = [i for i, a in enumerate(answers) if a is None]
        self.stats.add(cache_hits=len(requests) - len(missing))
        # Duplicate requests inside one call are computed once.
        first_index: dict[str, int] = {}
        for i in missing:
            first_index.setdefault(keys[i], i)
        unique = list(first_index.values())
        token, kept = uuid.uuid4().hex, set()

        def store(i: int, answer: Any) -> None:
            # An empty completion is returned but not kept, so a rerun asks again.
            if cacheable and keys[i] not in kept and not (isinstance(answer, dict) and answer.get("text") == ""):
                self.store.put_call(keys[i], kind, self.model_id, requests[i], answer, holder=token)
                kept.add(keys[i])

        pending, waited_on = unique, set()
        while pending:
            waiting = []
            for chunk in _chunks(pending, self.chunk_size, group):
                todo = [i for i in chunk if answers[i] is None]
                if cacheable:  # read what others answered meanwhile; claim what nobody is computing
                    now, ours, others = self.store.answer_or_claim([keys[i] for i in todo], kind, token,
                                                                   self.lease_seconds)
                    for i in todo:
                        answers[i] = now.get(keys[i])
                    self.stats.add(cache_hits=sum(answers[i] is not None for i in todo))
                    self._say_waiting(others, waited_on)
                    waiting += [i for i in todo if answers[i] is None and keys[i] not in ours]
                    todo = [i for i in todo if keys[i] in ours]
                if not todo:
                    continue
                try:
                    before = _counts(self.backend)
                    with self.store.heartbeat(token, self.lease_seconds) if cacheable else contextlib.nullcontext():
                        results = run(todo, store)
                    after = _counts(self.backend)
                    self.stats.add(**{name: after[name] - before[name] for name in after})
                    if len(results) != len(todo):
                        raise RuntimeError(f"{self.backend!r} returned {len(results)} answers for {len(todo)} requests")
                    for i, answer in zip(todo, results):
                        store(i, answer)
                        answers[i] = answer
                finally:
                    if cacheable:
                        self.store.release([keys[i] for i in todo], token)
            if waiting:  # another process is computing these: wait, then read them (or take over)
                time.sleep(CLAIM_POLL_SECONDS)
            pending = waiting
        for i in missing:
            if answers[i] is None:
                answers[i] = answers[first_index[keys[i]]]
        return answers

    def _say_waiting(self, others: list[dict[str, Any]], said: set) -> None:
        """Log once per peer that this process waits for the requests it claimed."""
        peers: dict[tuple, list[dict]] = {}
        for claim in others:
            peers.setdefault((claim["pid"], claim["host"]), []).append(claim)
        for (pid, host), claims in peers.items():
            if (pid, host) not in said:
                said.add((pid, host))
                left = max(c["expires"] for c in claims) - time.time()
                log.info("%s: waiting for %d request(s) process %s on %s is computing (its lease ends in %.0f s "
                         "unless it renews it; a stopped process delays this one by at most the lease)",
                         self.model_id, len(claims), pid, host, max(left, 0.0))


def _chunks(indices: list[int], size: int, group: Callable[[int], Any] | None) -> list[list[int]]:
    """``indices`` in chunks of about ``size``, closing a chunk only between groups when ``group`` is given."""
    if group is None:
        return [indices[i:i + size] for i in range(0, len(indices), size)]
    members: dict[Any, list[int]] = {}
    for i in indices:
        members.setdefault(group(i), []).append(i)
    chunks: list[list[int]] = [[]]
    for block in members.values():
        if chunks[-1] and len(chunks[-1]) + len(block) > size:
            chunks.append([])
        chunks[-1].extend(block)
    return [c for c in chunks if c]


def _counts(backend: Any) -> dict[str, int]:
    stats = getattr(backend, "stats", None)
    return {name: int(getattr(stats, name, 0)) for name in ("calls", "prompt_tokens", "generated_tokens", "retries")}


def _takes_on_result(method: Any) -> bool:
    try:
        return "on_result" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _capless_key(request: dict[str, Any]) -> str:
    """:func:`request_key` of a ``generate`` request without its token cap."""
    return request_key({**request, "config": {k: v for k, v in request["config"].items() if k != "max_new_tokens"}})


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
