"""What every backend offers: the same three verbs, one generation config, one set of counters.

``HFBackend`` runs a transformers model in this process, ``OpenAIBackend`` talks to any OpenAI-compatible
server, ``LlamaCppBackend`` runs a GGUF file. Each has

* ``generate(conversations, config, on_result=None) -> list[Completion]``: chat messages in, completions out,
  each also handed to ``on_result`` as it finishes; a model without a chat template is given the messages as
  plain text (:func:`completion_prompt`), which its ``template`` (:data:`CHAT` or :data:`COMPLETION`) records;
* ``loglikelihood(requests, on_result=None) -> list[tuple[float, int, bool]]``: (context, continuation) pairs
  in, (sum of the continuation's token log-probs in nats, its number of tokens, whether greedy decoding
  produces it) out, each also handed to ``on_result`` as it is scored;
* ``hidden_states(text, boundaries, ...)``: representations for probing (in-process models only), and
  ``hidden_states_batch(requests)`` for many :class:`StatesRequest` at once (:func:`hidden_states_of`).
"""
from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}
Conversation = list[Message]
LoglikelihoodResult = tuple[float, int, bool]


#: How a conversation reaches a model: through the model's chat template (``CHAT``), or, for a model without
#: one (a base model), as plain text (``COMPLETION``, :func:`completion_prompt`).
CHAT, COMPLETION = "chat", "completion"
TEMPLATES = (CHAT, COMPLETION)
#: The line a plain-text prompt ends with, where a chat template would open the assistant's turn.
COMPLETION_CUE = "Answer:"


def completion_prompt(messages: Sequence[Message]) -> str:
    """``messages`` as plain text for a model without a chat template: the same system and user text, with
    no chat markup, a blank line between messages, an assistant's message after :data:`COMPLETION_CUE`, and
    the cue last, where the model continues."""
    parts = [f"{COMPLETION_CUE} {m['content']}" if m["role"] == "assistant" else m["content"] for m in messages]
    return "\n\n".join([*parts, COMPLETION_CUE])


def template_of(tokenizer: Any) -> str:
    """:data:`CHAT` for a tokenizer with a chat template, else :data:`COMPLETION`."""
    return CHAT if getattr(tokenizer, "chat_template", None) else COMPLETION


def backend_template(backend: Any) -> str:
    """How a backend's prompts reach its model (its ``template``); a backend that does not say (a caller's
    stand-in) is taken as a chat model."""
    return getattr(backend, "template", CHAT)


def prompt_token_ids(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """The token ids a model is given for ``messages``: under its chat template with the generation prompt,
    or, without one, :func:`completion_prompt` encoded as plain text (with the tokenizer's BOS where it adds one)."""
    if template_of(tokenizer) == CHAT:
        return chat_token_ids(tokenizer, messages)
    return list(tokenizer(completion_prompt(messages))["input_ids"])


def prompt_text(tokenizer: Any, messages: Sequence[Message]) -> str:
    """The text a model is given for ``messages`` (:func:`prompt_token_ids`, as text)."""
    if template_of(tokenizer) == CHAT:
        return tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
    return completion_prompt(messages)


def chat_token_ids(tokenizer: Any, messages: Sequence[Message], *, add_generation_prompt: bool = True) -> list[int]:
    """The token ids of ``messages`` under the tokenizer's chat template (transformers 4 returns a list,
    transformers 5 a ``BatchEncoding`` whose ``input_ids`` is that list)."""
    ids = tokenizer.apply_chat_template(list(messages), add_generation_prompt=add_generation_prompt, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


class Completion(str):
    """A generated text (a ``str``, so code that only reads answers needs nothing else) with why generation
    ended: ``finish_reason`` ``"stop"`` (end of turn or a stop string), ``"length"`` (the token cap), a server's
    own reason, or None where unknown."""

    finish_reason: str | None

    def __new__(cls, text: str, finish_reason: str | None = None) -> "Completion":
        completion = super().__new__(cls, text)
        completion.finish_reason = finish_reason
        return completion


@dataclass(frozen=True)
class GenerationConfig:
    """How to decode: at most ``max_new_tokens`` tokens; ``temperature`` 0 is greedy (the default; the released
    code samples at 0.7 with ``top_p`` 0.9, the nucleus mass, used only when sampling); ``seed`` seeds sampling
    (without one, sampling is neither reproducible nor cached). The text stops before the first ``stop``
    string or, with ``keep_stop``, right after it (a server is then not sent the stop strings, which it would
    drop, and generates to its cap)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    stop: tuple[str, ...] = ()
    keep_stop: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def as_dict(self) -> dict[str, Any]:
        """The decoding as plain data (a cache key's part); ``keep_stop`` only when set, so a decoding
        without it keeps the key it has without the field."""
        settings = asdict(self) | {"stop": list(self.stop)}
        if not self.keep_stop:
            del settings["keep_stop"]
        return settings


@dataclass(frozen=True)
class StatesRequest:
    """One ``hidden_states`` call as a record, so that many can go to a backend at once; ``options`` are the
    call's keyword arguments as given (``layer``, ``suffixes``, ``normalize``, ``unit``), so the cache key of a
    request is the same either way it is asked."""

    text: str
    boundaries: Sequence[int]
    options: dict[str, Any] = field(default_factory=dict)


def hidden_states_of(backend: Any, requests: Sequence[StatesRequest]) -> list[Any]:
    """``backend.hidden_states_batch(requests)``, or one ``hidden_states`` call per request for a backend
    that has only the single form (a stand-in model, a server that raises its own error)."""
    if hasattr(backend, "hidden_states_batch"):
        return backend.hidden_states_batch(requests)
    return [backend.hidden_states(r.text, r.boundaries, **r.options) for r in requests]


@dataclass
class BackendStats:
    """Work a backend did, so tests and notebooks can see what a cache saved: ``calls`` (forward/generate calls
    in process; HTTP requests for a server, every attempt), ``prompt_tokens`` fed (a server's ``usage`` where it
    reports one), ``generated_tokens``, ``cache_hits`` (answered from the store) and ``retries``."""

    calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        """Thread-safe increment, e.g. ``stats.add(calls=1, prompt_tokens=12)``."""
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def reset(self) -> None:
        with self._lock:
            self.calls = self.prompt_tokens = self.generated_tokens = self.cache_hits = self.retries = 0


@runtime_checkable
class Backend(Protocol):
    """What callers use of a backend (the verbs' contracts: the module docstring). They also take one with
    only ``stats`` and the three verbs (a test's stand-in): asked a chunk at a time without ``on_result`` or
    ``hidden_states_batch`` (:func:`hidden_states_of`), freeing nothing without ``close``; a ``tokenizer``,
    where a backend has one, gives chat templates and token counts."""

    stats: BackendStats

    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig = GenerationConfig(), *,
                 on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]: ...

    def loglikelihood(self, requests: Sequence[tuple[str, str]], *,
                      on_result: Callable[[int, LoglikelihoodResult], None] | None = None
                      ) -> list[LoglikelihoodResult]: ...

    def hidden_states(self, text: str, boundaries: Sequence[int], **kwargs: Any) -> Any: ...

    def hidden_states_batch(self, requests: Sequence[StatesRequest]) -> list[Any]: ...

    def close(self) -> None:
        """Free what it holds (weights, a llama.cpp context); the cache calls it when it lets a model go."""


def truncate_at_stop(text: str, stop: Sequence[str], keep: bool = False) -> str:
    """``text`` up to the earliest occurrence of any stop string: not including it, or, with ``keep``,
    including it (the stop string that ends first wins when two overlap)."""
    cut = min((i + (len(s) if keep else 0) for s in stop if s and (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]


def encode_pair(context: str, continuation: str, encode: Callable[[str], list[int]], first: int,
                alone: Callable[[str], list[int]] | None = None) -> tuple[list[int], list[int]]:
    """A (context, continuation) pair in tokens as lm-eval encodes it: after :func:`split_whitespace`, the pair
    encoded together and cut at ``len(encode(context))``; an empty context is the token ``first`` (BOS, else
    EOS), the continuation then encoded ``alone`` (default ``encode``). ValueError for a pair adding no token."""
    context, continuation = split_whitespace(context, continuation)
    if not continuation:
        raise ValueError(f"empty continuation for context {context[:40]!r}")
    if not context:
        return [first], (alone or encode)(continuation)
    whole = encode(context + continuation)
    n_context = len(encode(context))
    if n_context >= len(whole):
        raise ValueError(f"continuation {continuation[:40]!r} adds no token to its context")
    return whole[:n_context], whole[n_context:]


def split_whitespace(context: str, continuation: str) -> tuple[str, str]:
    """lm-eval's tokenisation boundary: the context's trailing whitespace moves onto the continuation
    (``("Q: a ", "b")`` -> ``("Q: a", " b")``), so its first token is " b" as in natural text."""
    stripped = context.rstrip()
    return stripped, context[len(stripped):] + continuation
