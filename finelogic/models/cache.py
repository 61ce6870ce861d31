"""The one cache of model calls: every verb of every backend, keyed by model identity + request.

:func:`finelogic.models.spec.open_model` wraps every backend it opens in a :class:`CachedBackend`, so a
rerun with nothing changed makes no model call, whichever verb a notebook uses. The answers are rows of the
one store (:mod:`finelogic.store`, ``$FINELOGIC_CACHE/store.sqlite``): ``generate`` and ``loglikelihood``
answers as JSON, ``hidden_states`` arrays as ``.npz`` blobs (no pickle), each answer stored in its own
transaction as it finishes, so a killed run restarts without recomputing anything it had finished, and
checked by type when read (a bad row is named, deleted and asked again, never coerced).

Keys are the sha256 of the canonical JSON of everything that determines the answer: the model's
identity (:attr:`finelogic.models.spec.ModelSpec.model_id`: the model, never the transport, so a
restarted server on a new port still hits), the verb, and the request. Credentials are never part of a
request or a key.

Several processes may share the store. Misses are computed in chunks. For each chunk a process reads what
others stored meanwhile and *claims* the requests still missing that no other process holds, in one
transaction; it computes its claimed requests (renewing its claims' lease while it works: see
:mod:`finelogic.store`), stores each answer and drops its claim in one transaction. Requests another process
has claimed are waited for (polled, with a log message naming the process) after the process's own work
and read from the store; a claim whose lease lapsed (its process stopped, hung or died) is taken over. So
two processes on the same run never send a request the other is answering or has answered, and two runs
asking different requests of one model compute at the same time.
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

from finelogic.models.base import (BackendStats, Completion, Conversation, GenerationConfig, LoglikelihoodResult,
                                   StatesRequest, hidden_states_of)
from finelogic.store import LEASE_SECONDS, Store, canonical_key, open_store

log = logging.getLogger(__name__)
#: How often a process waiting for requests another process has claimed looks for their answers.
CLAIM_POLL_SECONDS = 0.5


#: sha256 of the canonical JSON of everything that determines the answer (the store's one key function).
request_key = canonical_key


def _loglikelihood_keys(model_id: str, pairs: Sequence[tuple[str, str]]) -> list[str]:
    """:func:`request_key` of each ``loglikelihood`` request, its canonical JSON written directly (keys in
    sorted order) with each distinct text encoded once: a context is shared by all its options, and a
    paper-size LogicMark rerun keys 120,000 requests."""
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

    Args:
        backend: the backend, or a zero-argument callable that opens it (then the model is loaded only
            when some request is not cached: a fully cached run never loads weights).
        store: the store (:class:`finelogic.store.Store`) or its SQLite file's path; one store holds every
            model's answers (their keys differ).
        model_id: the model's identity in every key: two different models must never share one.
        chunk_size: misses sent to the backend per call; answers are stored after each chunk, or as each
            one finishes when the backend's ``generate`` takes an ``on_result`` callback.
        tokenizer: a zero-argument callable giving the model's tokenizer without loading the weights.
        lease_seconds: how long this wrapper's claims hold without renewal (renewed every third of it while
            it computes): the longest a stopped process delays another waiting for its requests.

    Sampled generations (``temperature > 0``) are cached only when ``config.seed`` is set (the seed is part
    of the key); unseeded sampling always calls the model. Empty completions are never stored (a rerun asks
    again); completions cut by the token cap are stored with ``finish_reason`` ``"length"`` (the same
    request gets the same cut answer again). A greedy request with a larger cap than a stored one, equal in
    everything else, is answered by the stored answer when that one ended by itself (``finish_reason``
    ``"stop"``): greedy decoding writes the same tokens whatever the cap, so raising ``max_new_tokens``
    computes only the answers the smaller cap cut off. ``stats.cache_hits`` counts answers served from
    the store; ``calls``, ``prompt_tokens``, ``generated_tokens`` and ``retries`` mirror what the wrapped
    backend counted for the work sent through this wrapper.
    """

    def __init__(self, backend: Any, store: Store | str | os.PathLike, model_id: str, *, chunk_size: int = 32,
                 tokenizer: Callable[[], Any] | None = None, lease_seconds: float = LEASE_SECONDS) -> None:
        self._backend = None if _is_loader(backend) else backend
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
        """Let go of the opened model (its weights, on the GPU too) when it was opened from a loader: a run
        that evaluates several in-process models one after another then holds one at a time. The counts
        and the store stay; a later request the store cannot answer opens the model again. A backend
        handed in ready (not a loader) is the caller's and is kept."""
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
        """The model's tokenizer: the loaded backend's, else one read without loading weights (``tokenizer``
        argument) so that a fully cached run can still apply chat templates and count tokens."""
        if self._backend is not None or self._tokenizer_loader is None:
            return getattr(self.backend, "tokenizer", None)
        if self._tokenizer is None:
            self._tokenizer = self._tokenizer_loader()
        return self._tokenizer

    def __getattr__(self, name: str) -> Any:
        # tokenizer, model, batch_size, ...: whatever the wrapped backend offers.
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
        settings = config.as_dict()  # once per call, not per request (a paper-size rerun asks 100,000s)
        requests = [{"kind": "generate", "model": self.model_id, "messages": [dict(m) for m in c],
                     "config": dict(settings)} for c in conversations]

        def run(todo: list[int], store: Callable[[int, Any], None]) -> list[Any]:
            chosen = [conversations[i] for i in todo]
            if _takes_on_result(self.backend.generate):
                texts = self.backend.generate(chosen, config, on_result=lambda j, text: store(todo[j], self._text_record(text)))
            else:
                texts = self.backend.generate(chosen, config)
            return [self._text_record(t) for t in texts]

        reuse = self._finished_within_smaller_cap if cacheable and config.greedy else None
        answers = self._answer("generate", requests, cacheable, run, reuse=reuse)
        return [Completion(a["text"], a.get("finish_reason")) for a in answers]

    def _finished_within_smaller_cap(self, requests: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
        """Answers to greedy ``requests`` (by position) that the store holds under a smaller token cap and
        that ended by themselves there (``finish_reason`` ``stop``): greedy decoding writes the same tokens
        whatever the cap, so a larger cap gives the same text. Everything but ``max_new_tokens`` must be
        equal (model, messages, stop strings, seed, ...). Answers the smaller cap cut off are not reused."""
        cap = int(requests[0]["config"]["max_new_tokens"])
        if cap not in self._shorter:  # one scan per cap per wrapper: a paper-size run asks thousands of times
            finished: dict[str, dict[str, Any]] = {}
            for request, answer in self.store.finished_generations(self.model_id, cap):
                finished[_capless_key(request)] = answer
            self._shorter[cap] = finished
        finished = self._shorter[cap]
        if not finished:
            return {}
        found = {}
        for i, request in enumerate(requests):
            answer = finished.get(_capless_key(request))
            if answer is not None:
                found[i] = answer
        if found:
            log.info("%s: %d of %d request(s) answered by greedy generations that ended within a smaller token "
                     "cap", self.model_id, len(found), len(requests))
        return found

    def loglikelihood(self, requests: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        """As the wrapped backend's ``loglikelihood``, answering cached pairs from the store."""
        keyed = [{"kind": "loglikelihood", "model": self.model_id, "context": c, "continuation": x}
                 for c, x in requests]
        answers = self._answer("loglikelihood", keyed, True,
                               lambda todo, _: [self._scored(r) for r in
                                                self.backend.loglikelihood([requests[i] for i in todo])],
                               group=lambda i: requests[i][0], keys=_loglikelihood_keys(self.model_id, requests))
        return [(float(a[0]), int(a[1]), bool(a[2])) for a in answers]

    def hidden_states(self, text: str, boundaries: Sequence[int], **kwargs: Any) -> Any:
        """As the wrapped backend's ``hidden_states``; the arrays are stored as ``.npz`` blobs."""
        return self.hidden_states_batch([StatesRequest(text, boundaries, kwargs)])[0]

    def hidden_states_batch(self, requests: Sequence[StatesRequest]) -> list[Any]:
        """As the wrapped backend's ``hidden_states_batch`` (or one ``hidden_states`` per request where it
        has none), answering stored requests from the store."""
        keyed = [_states_key(self.model_id, r) for r in requests]
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
        """A log-likelihood as stored: ``[logprob, tokens, greedy]``, numbers as Python numbers (numpy's
        too); a backend that answers with anything else is refused."""
        try:
            logprob, tokens, greedy = result
            if isinstance(logprob, (str, bytes)) or isinstance(tokens, (str, bytes, float)) \
                    or not isinstance(greedy, (bool, np.bool_)):
                raise TypeError
            return [float(logprob), int(tokens), bool(greedy)]
        except (TypeError, ValueError):
            raise TypeError(f"{self.backend!r} answered a log-likelihood with {result!r:.80}; "
                            "(logprob, tokens, greedy) was expected") from None

    def _mirror(self, before: dict[str, int]) -> None:
        """Add what the wrapped backend counted since ``before`` to this wrapper's stats."""
        after = _counts(self.backend)
        self.stats.add(**{name: after[name] - before[name] for name in after})

    def _answer(self, kind: str, requests: list[dict], cacheable: bool, run: Callable,
                group: Callable[[int], Any] | None = None, keys: list[str] | None = None,
                reuse: Callable[[list[dict]], dict[int, Any]] | None = None) -> list[Any]:
        """Answers in request order: cached ones from the store, the rest computed chunk by chunk.
        ``group(i)``: requests with the same group value always share a chunk (a context's continuations,
        scored from one shared KV cache, must not be split by a chunk boundary). ``keys``: the requests'
        :func:`request_key`, when the caller has them faster. ``reuse(missing requests)``: stored answers to
        other requests that are this request's answer too (by position); stored under this request's key."""
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
            # An empty completion is not an answer: it is returned (with its finish_reason) but not kept,
            # so a rerun asks again. An answer stored as it arrived (on_result) is not written twice.
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
                    self._mirror(before)
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
        """Log once per peer that this process waits for requests the peer claimed, and for how long at most."""
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
    """``indices`` in chunks of about ``size``; with ``group``, a group's members are kept together (in the
    order of their first appearance), and a chunk closes only between groups."""
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


_MIRRORED = ("calls", "prompt_tokens", "generated_tokens", "retries")


def _counts(backend: Any) -> dict[str, int]:
    stats = getattr(backend, "stats", None)
    return {name: int(getattr(stats, name, 0)) for name in _MIRRORED}


def _is_loader(backend: Any) -> bool:
    return callable(backend) and not hasattr(backend, "generate") and not hasattr(backend, "loglikelihood")


def _takes_on_result(method: Any) -> bool:
    try:
        return "on_result" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _capless_key(request: dict[str, Any]) -> str:
    """:func:`request_key` of a ``generate`` request without its token cap."""
    return request_key({**request, "config": {k: v for k, v in request["config"].items() if k != "max_new_tokens"}})


def _states_key(model_id: str, request: StatesRequest) -> dict[str, Any]:
    return {"kind": "hidden_states", "model": model_id, "text": request.text,
            "boundaries": [int(b) for b in request.boundaries], "options": _jsonable(dict(request.options))}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
