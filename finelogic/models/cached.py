"""An on-disk cache in front of any backend, so an evaluation rerun with nothing changed is free.

``OpenAIBackend`` caches its own HTTP requests; this wrapper gives in-process backends (``HFBackend``)
the same property with the same :class:`~finelogic.models.cache.ResponseCache` (append-only JSONL,
keyed by a hash of the request). Misses are sent to the wrapped backend in one batch, so batching and
KV-cache sharing still happen; each answer is appended as soon as its batch returns, so a crash loses
at most the batch in flight.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

from finelogic.models.base import BackendStats, Conversation, GenerationConfig, LoglikelihoodResult
from finelogic.models.cache import ResponseCache, request_key


class CachedBackend:
    """Wrap ``backend`` with a JSONL response cache at ``path``.

    Args:
        backend: anything with ``generate`` / ``loglikelihood`` (and optionally ``hidden_states``,
            which is passed through uncached).
        path: the JSONL file (created on first write).
        model_id: what identifies the model's answers in the keys (name or path, dtype, revision):
            two different models must never share a key.
        chunk_size: misses sent to the backend per call; answers are written after each chunk.

    Sampled generations (``temperature > 0``) are cached only when ``config.seed`` is set (the seed is
    part of the key); unseeded sampling always calls the model.
    ``stats.cache_hits`` counts answers served from disk; the wrapped backend's ``stats`` count model calls.
    """

    def __init__(self, backend: Any, path: str | os.PathLike, model_id: str, *, chunk_size: int = 32) -> None:
        self.backend = backend
        self.cache = ResponseCache(path)
        self.model_id = model_id
        self.chunk_size = chunk_size
        self.stats = BackendStats()

    def __getattr__(self, name: str) -> Any:
        # tokenizer, model, hidden_states, ...: whatever the wrapped backend offers.
        return getattr(self.backend, name)

    def __repr__(self) -> str:
        return f"CachedBackend({self.backend!r}, {str(self.cache.path)!r})"

    def generate(self, conversations: Sequence[Conversation],
                 config: GenerationConfig = GenerationConfig()) -> list[str]:
        """As the wrapped backend's ``generate``, answering cached conversations from disk."""
        cacheable = config.greedy or config.seed is not None
        requests = [{"kind": "generate", "model": self.model_id, "messages": list(c), "config": config.as_dict()}
                    for c in conversations]
        return self._answer(requests, cacheable,
                            lambda todo: self.backend.generate([conversations[i] for i in todo], config))

    def loglikelihood(self, requests: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        """As the wrapped backend's ``loglikelihood``, answering cached pairs from disk."""
        keyed = [{"kind": "loglikelihood", "model": self.model_id, "context": c, "continuation": x}
                 for c, x in requests]
        answers = self._answer(keyed, True, lambda todo: self.backend.loglikelihood([requests[i] for i in todo]))
        return [(float(a[0]), int(a[1]), bool(a[2])) for a in answers]

    def _answer(self, requests: list[dict], cacheable: bool, run) -> list[Any]:
        keys = [request_key(r) for r in requests]
        answers: list[Any] = [self.cache.get(k) if cacheable else None for k in keys]
        missing = [i for i, a in enumerate(answers) if a is None]
        self.stats.add(cache_hits=len(requests) - len(missing))
        # Duplicate requests inside one call are computed once.
        unique = list(dict.fromkeys(keys[i] for i in missing))
        first_index = {}
        for i in missing:
            first_index.setdefault(keys[i], i)
        for start in range(0, len(unique), self.chunk_size):
            todo = [first_index[k] for k in unique[start:start + self.chunk_size]]
            for i, answer in zip(todo, run(todo)):
                answer = list(answer) if isinstance(answer, tuple) else answer
                if cacheable:
                    self.cache.put(keys[i], requests[i], answer)
                answers[i] = answer
        for i in missing:
            if answers[i] is None:
                answers[i] = answers[first_index[keys[i]]]
        return answers
