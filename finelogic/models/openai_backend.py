"""Backend for any OpenAI-compatible server (OpenAI, DeepSeek, vLLM, llama-cpp-python's server).

Concurrency and retries live here and nowhere else: identical requests are sent once, ``max_concurrency``
at a time; 429, 5xx, time-outs and unreadable replies retry with backoff, other 4xx fail at once. The API
key comes from the environment only and never appears in a request, log or error; credentials in a base URL
are sent as basic authentication and a query's parameters with every request, and wherever the URL is shown
(errors, reprs, this module's, httpx's and openai's log lines) its password and query keys are ``***``
(:func:`finelogic.config.redact_url`).
"""
from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence
from urllib.parse import parse_qsl, unquote, urlencode

from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.config import SERVER_URLS_ENV, redact_url
from finelogic.models.base import (CHAT, TEMPLATES, BackendStats, Completion, completion_prompt, Conversation,
                                   GenerationConfig, LoglikelihoodResult, split_whitespace, truncate_at_stop)

log = logging.getLogger(__name__)
#: The loggers of the HTTP stack that name each request's URL (its query included).
URL_LOGGERS = ("httpx", "openai._base_client")

#: Characters a reply may hold per token of its cap (English averages about 4): beyond it, it is cut there.
CHARS_PER_TOKEN_CAP = 16

# The echo self-check's text: repeated, so a correctly aligned echo shows each token as the top alternative
# at its own position, not one earlier or later.
ALIGNMENT_PROBE = "; ".join(["kettle orbit violin maple zebra copper"] * 6) + ";"


class EmptyCompletion(ValueError):
    """A chat reply without text (``content`` null or empty); ``finish_reason`` says why, when the server does."""

    def __init__(self, finish_reason: str | None) -> None:
        super().__init__(f"empty completion (finish_reason {finish_reason!r})")
        self.finish_reason = finish_reason


class ServerUnreachable(ConnectionError):
    """No OpenAI-compatible server answers at the backend's URL."""


class RequestFailed(RuntimeError):
    """A request failed for good (a non-retryable error, or every attempt used up)."""


class LogprobAlignmentError(RuntimeError):
    """The server's echoed prompt log-probs do not line up with the prompt tokens."""


class _RedactedURLs(logging.Filter):
    """Shows every URL in a log record's message with its credentials as ``***``."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        shown = redact_url(message)
        if shown != message:
            record.msg, record.args = shown, None
        return True


_REDACTED_URLS = _RedactedURLs()


class OpenAIBackend:
    """A model behind an OpenAI-compatible HTTP API at ``base_url`` (None: ``$OPENAI_BASE_URL``, else
    api.openai.com), its key in ``$api_key_env`` (unset: a placeholder is sent). ``timeout``: seconds for a whole
    response of one attempt, not per read; ``max_attempts`` per request, the first included; the n-th retry waits
    about ``backoff_base * 2**(n-1)`` seconds (jittered, at most ``backoff_max``) unless a 429 gives ``Retry-After``.
    ``check_alignment``: verify once that the echoed log-probs line up with the prompt tokens. ``extra_body``:
    server-specific parameters sent with every request (part of the model's identity in the cache), e.g.
    ``{"repeat_penalty": 1.0}`` so llama-cpp-python's greedy decoding is argmax. ``template``: ``"chat"`` sends
    conversations to ``/chat/completions`` (the server applies the model's chat template), ``"completion"``
    sends them as plain text (:func:`~finelogic.models.base.completion_prompt`) to ``/completions``, for a
    base model served without a chat template."""

    def __init__(self, model: str, base_url: str | None = None, *, api_key_env: str = "OPENAI_API_KEY",
                 max_concurrency: int = 8,
                 timeout: float = 60.0, max_attempts: int = 6, backoff_base: float = 1.0,
                 backoff_max: float = 60.0, check_alignment: bool = True,
                 extra_body: dict[str, Any] | None = None, template: str = CHAT) -> None:
        import openai

        if template not in TEMPLATES:
            raise ValueError(f"template must be one of {', '.join(TEMPLATES)}, got {template!r}")
        self.model = model
        self.template = template
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.max_attempts = max_attempts
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.check_alignment = check_alignment
        self.extra_body = dict(extra_body or {})
        plain_url, credentials, query = server_url(base_url if base_url is not None
                                                   else os.environ.get("OPENAI_BASE_URL") or None)
        self._secret = api_key(api_key_env)
        # The password (the user part when it has none: a token) and the query's keys, kept out of errors.
        self._url_secrets = [credentials[1] or credentials[0]] if credentials else []
        self._url_secrets += [v for k, v in query.items() if v and redact_url(f"?{k}=v") != f"?{k}=v"]
        for name in URL_LOGGERS:  # their request lines name the URL with its query
            if _REDACTED_URLS not in logging.getLogger(name).filters:
                logging.getLogger(name).addFilter(_REDACTED_URLS)
        self._client = openai.OpenAI(api_key=self._secret or "no-key", base_url=plain_url, max_retries=0,
                                     timeout=timeout, http_client=_deadline_client(timeout, credentials),
                                     default_query=query or None)
        shown = str(self._client.base_url)
        if credentials:  # shown with its user, never its password: in reprs, errors and logs
            scheme, rest = shown.split("://", 1)
            shown = f"{scheme}://{credentials[0] + ':' if credentials[1] else ''}***@{rest}"
        self.base_url = redact_url(shown + (f"?{urlencode(query)}" if query else ""))
        self.stats = BackendStats()
        self._aligned: bool | None = None
        self._lock = threading.Lock()
        self._senders: tuple[int, ThreadPoolExecutor] | None = None
        self._pool_lock = threading.Lock()
        #: Model names the server answered for instead of ``model`` (:meth:`_check_model`).
        self.other_models: set[str] = set()
        self._models_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.model!r}, base_url={self.base_url!r})"

    def check(self) -> None:
        """Ask the server (``GET /models``) whether it answers (else :class:`ServerUnreachable`), takes the key
        and serves :attr:`model` (else :class:`RequestFailed`), so a run fails in seconds with what to fix."""
        import openai

        try:
            served = [m.id for m in self._client.models.list(timeout=15)]
        except openai.APIConnectionError as error:
            raise ServerUnreachable(f"no server answers at {self.base_url} ({self._redact(str(error))}); start it "
                                    "(vLLM: `vllm serve MODEL`; llama.cpp: `python -m llama_cpp.server --model FILE`) "
                                    "or fix the URL after '@' in the model spec") from None
        except openai.AuthenticationError:
            raise RequestFailed(f"{self.base_url} refused the request (HTTP 401): "
                                + (f"set ${self.api_key_env} to a valid key" if self._secret is None
                                   else f"the key in ${self.api_key_env} is not accepted")) from None
        except openai.PermissionDeniedError:
            raise RequestFailed(f"{self.base_url} refused the key in ${self.api_key_env} (HTTP 403)") from None
        except (openai.NotFoundError, openai.APIStatusError):
            return  # a server without a model list: the first request will tell
        if served and not any(self.model in (name, name.rsplit("/", 1)[-1]) for name in served):
            raise RequestFailed(f"{self.base_url} does not serve {self.model!r}; it serves "
                                f"{', '.join(map(repr, served[:10]))}{' ...' if len(served) > 10 else ''}")

    # ------------------------------------------------------------------ generate
    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig = GenerationConfig(),
                 *, on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]:
        """Chat completions in input order; ``on_result(index, completion)`` runs in a worker thread."""
        params: dict[str, Any] = {"max_tokens": config.max_new_tokens, "temperature": config.temperature}
        if not config.greedy:
            params["top_p"] = config.top_p
        if config.seed is not None:
            params["seed"] = config.seed
        if config.stop and not config.keep_stop:  # a server drops the stop string; kept ones are cut here
            params["stop"] = list(config.stop)
        if self.template == CHAT:
            requests = [{"endpoint": "chat", "messages": [dict(m) for m in c], **params} for c in conversations]
        else:
            requests = [{"endpoint": "completions", "prompt": completion_prompt(c), **params} for c in conversations]

        def completion(response: dict[str, Any]) -> Completion:
            text = truncate_at_stop(response["text"] or "", config.stop, keep=config.keep_stop)
            return Completion(text, response["finish_reason"])

        report = None if on_result is None else (lambda i, response: on_result(i, completion(response)))
        return [completion(r) for r in self._run(requests, self._reply, desc=self.template, on_result=report)]

    def _reply(self, request: dict[str, Any]) -> dict[str, Any]:
        """One generation's ``{"text", "finish_reason"}`` from the request's endpoint (a chat or a plain-text
        completion): an empty reply refused, one far over its cap cut, the model it names checked."""
        chat = request["endpoint"] == "chat"
        response = self._post("/chat/completions" if chat else "/completions", request)
        if not response.get("choices"):
            raise ValueError("the server answered with no choices")
        choice = response["choices"][0]
        text = choice["message"].get("content") if chat else choice.get("text")
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{'message content' if chat else 'completion text'} is a {type(text).__name__}, "
                            "not text")
        finish_reason = choice.get("finish_reason")
        if not text:
            raise EmptyCompletion(finish_reason)
        self._check_model(response.get("model"))
        limit = CHARS_PER_TOKEN_CAP * int(request.get("max_tokens") or 0)
        if limit and len(text) > limit:
            log.warning("%s: a reply of %d characters for a cap of %s tokens: cut to %d characters (the server "
                        "did not respect max_tokens)", self.model, len(text), request.get("max_tokens"), limit)
            text, finish_reason = text[:limit], "length"
        return {"text": text, "finish_reason": finish_reason}

    def _check_model(self, answered: Any) -> None:
        """Record (``other_models``) and warn once about a reply naming another model than the one asked for
        (a table's row would name the wrong model); a dated snapshot or a path ending in the name is fine."""
        if not isinstance(answered, str) or not answered or answered == self.model:
            return
        if answered.startswith(self.model) or answered.endswith("/" + self.model) or self.model.endswith("/" + answered):
            return
        with self._models_lock:
            if answered in self.other_models:
                return
            self.other_models.add(answered)
        log.warning("%s: the server answered for another model, %r; its answers are kept under the model asked "
                    "for (set the model name the server serves)", self.model, answered)

    # ------------------------------------------------------------- loglikelihood
    def loglikelihood(self, requests: Sequence[tuple[str, str]], *,
                      on_result: Callable[[int, LoglikelihoodResult], None] | None = None) -> list[LoglikelihoodResult]:
        """Score continuations from the completions endpoint's echoed prompt log-probs (prompt: context +
        continuation after lm-eval's whitespace rule; a token straddling the boundary counts as continuation);
        ``on_result(index, score)`` runs in a worker thread as each arrives."""
        pairs = [split_whitespace(c, x) for c, x in requests]
        for context, continuation in pairs:
            if not context or not continuation:
                raise ValueError(f"both context and continuation must be non-empty: {(context[:40], continuation[:40])}")
        self.ensure_aligned()
        def score(i: int, echo: dict[str, Any]) -> LoglikelihoodResult:
            context, continuation = pairs[i]
            return _continuation_score(echo, len(context + continuation), len(context), context + continuation)

        report = None if on_result is None else (lambda i, echo: on_result(i, score(i, echo)))
        echoes = self._run([self._echo_request(c + x) for c, x in pairs], self._echo, desc="loglikelihood",
                           on_result=report)
        return [score(i, echo) for i, echo in enumerate(echoes)]

    def _echo_request(self, prompt: str) -> dict[str, Any]:
        return {"endpoint": "completions", "prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1,
                "temperature": 0.0}

    def _echo(self, request: dict[str, Any]) -> dict[str, Any]:
        response = self._post("/completions", request)
        logprobs = response["choices"][0].get("logprobs")
        if not logprobs or not logprobs.get("tokens"):
            raise RequestFailed(f"{self!r}: the completions endpoint returned no echoed log-probs; "
                                "this server cannot score log-likelihoods")
        echo = {"tokens": list(logprobs["tokens"]), "token_logprobs": list(logprobs["token_logprobs"]),
                "text_offset": list(logprobs["text_offset"]),
                "top_logprobs": [dict(t) if t else {} for t in (logprobs.get("top_logprobs") or [])]}
        _prompt_tokens(echo, len(request["prompt"]))  # a malformed echo fails here, before it is cached
        return echo

    def ensure_aligned(self) -> None:
        """Run the echo self-check once per backend; :class:`LogprobAlignmentError` if the log-probs are shifted."""
        if not self.check_alignment or self._aligned:
            return
        with self._lock:
            if self._aligned:
                return
            echo, = self._run([self._echo_request(ALIGNMENT_PROBE)], self._echo, desc="self-check")
            problem = alignment_problem(echo, ALIGNMENT_PROBE)
            if problem:
                raise LogprobAlignmentError(
                    f"{self!r} echoes prompt log-probs that do not line up with the prompt tokens ({problem}). "
                    "Log-likelihood scores from it would be wrong, so finelogic refuses to compute them. "
                    "Use a server whose echo is correct (e.g. vLLM) or HFBackend.")
            self._aligned = True

    # ------------------------------------------------------------- hidden states
    def hidden_states(self, text: str, boundaries: Sequence[int], **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self!r}: servers do not expose hidden states; use HFBackend")

    # ------------------------------------------------------- concurrency, retries
    def _post(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        """One request's JSON reply, through the client's plain ``post``: the SDK's typed parameters and reply
        objects cost CPU per request that plain JSON bodies do not need."""
        import httpx

        body = {"model": self.model, **{k: v for k, v in request.items() if k not in ("endpoint", "extra_body")},
                **(request.get("extra_body") or {})}
        response = self._client.post(path, body=body, cast_to=httpx.Response).json()
        if not isinstance(response, dict):
            raise TypeError(f"the reply is a JSON {type(response).__name__}, not an object")
        usage = response.get("usage")
        if isinstance(usage, dict):
            self.stats.add(prompt_tokens=usage.get("prompt_tokens") or 0,
                           generated_tokens=usage.get("completion_tokens") or 0)
        return response

    def _run(self, requests: list[dict[str, Any]], send: Callable[[dict[str, Any]], dict[str, Any]], *,
             desc: str, on_result: Callable[[int, dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
        """Send each distinct request once, ``max_concurrency`` at a time; answers in input order."""
        if self.extra_body:
            requests = [r | {"extra_body": self.extra_body} for r in requests]
        results: list[dict[str, Any] | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}  # identical requests share one call
        for i, request in enumerate(requests):
            todo.setdefault(json.dumps(request, sort_keys=True), []).append(i)
        if not todo:
            return []

        def one(key: str, index: int) -> None:
            response = self._with_retries(index, requests[index], send)
            for i in todo[key]:
                results[i] = response
                if on_result is not None:
                    on_result(i, response)

        with tqdm(total=len(todo), desc=f"{self.model} {desc}", disable=len(todo) < 8) as bar:
            pool = self._pool()
            futures = [pool.submit(one, key, indices[0]) for key, indices in todo.items()]
            for future in futures:
                future.add_done_callback(lambda _: bar.update(1))
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in done if f.exception() is not None]
            if failed:
                for future in pending:
                    future.cancel()
                wait(pending)  # the ones already sending finish (and reach on_result) before the error is raised
                raise failed[0].exception()  # finished answers already went to on_result
        return results  # type: ignore[return-value]

    def _pool(self) -> ThreadPoolExecutor:
        """``max_concurrency`` sender threads, started once for all calls (a run makes hundreds of small ones);
        a process forked after they started gets its own."""
        with self._pool_lock:  # not self._lock: ensure_aligned holds that while it sends
            if self._senders is None or self._senders[0] != os.getpid():
                pool = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix=f"{self.model}-send")
                self._senders = (os.getpid(), pool)
            return self._senders[1]

    def _with_retries(self, index: int, request: dict[str, Any], send: Callable) -> dict[str, Any]:
        """The one place that retries: classifies each failure as retryable or fatal."""
        import openai

        text = request.get("prompt") or (request.get("messages") or [{}])[-1].get("content", "")
        what = f"request {index} ({text[:40]!r}{'...' if len(text) > 40 else ''})"
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            self.stats.add(calls=1)
            delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            try:
                return send(request)
            except openai.APIStatusError as error:
                status = error.status_code
                last = f"HTTP {status}: {self._redact(str(error.message))}"
                if status == 429:
                    delay = _retry_after(error.response.headers, self.backoff_max) or delay
                elif status < 500 and status != 408:
                    raise RequestFailed(f"{self!r}: {what} failed: {last}") from None
            except (openai.APITimeoutError, openai.APIConnectionError) as error:
                last = f"{type(error).__name__}: {self._redact(str(error))}"
            except EmptyCompletion as empty:
                last = f"no text (finish_reason {empty.finish_reason!r})"
                # Two attempts before a reply without text is recorded as an empty completion; "length" at once.
                if empty.finish_reason == "length" or attempt >= min(self.max_attempts, 2):
                    log.warning("%s: %s; recorded as an empty completion", what, last)
                    return {"text": "", "finish_reason": empty.finish_reason or "empty"}
            except (openai.APIResponseValidationError, ValueError, KeyError, TypeError, AttributeError,
                    IndexError, RecursionError) as error:  # RecursionError: JSON nested too deep to read
                last = f"unreadable response ({type(error).__name__}: {self._redact(str(error))[:200]})"
            if attempt < self.max_attempts:
                log.warning("%s: attempt %d/%d failed (%s); retrying in %.2f s",
                            what, attempt, self.max_attempts, last, delay)
                self.stats.add(retries=1)
                time.sleep(delay)
        raise RequestFailed(f"{self!r}: {what} failed after {self.max_attempts} attempts; last error: {last}")

    def _redact(self, text: str) -> str:
        for secret in (self._secret, *self._url_secrets):
            if secret:
                text = text.replace(secret, "***")
        return redact_url(re.sub(r"(?i)((?:bearer|basic)\s+)\S+", r"\1***", text))


def server_url(base_url: str | None) -> tuple[str | None, tuple[str, str] | None, dict[str, str]]:
    """``(url without credentials or query, (user, password) or None, the query's parameters)``: the user part
    runs to the last ``@`` before the path (a password may hold ``@``). A URL that shows ``***`` where its
    credentials were (a notebook's parameters do) is the one of ``$FINELOGIC_SERVER_URLS`` it stands for (the
    runner sets it for the kernels it starts). A URL without ``http(s)://`` or with whitespace is a ValueError
    at once (its credentials shown as ``***``), not retries ending in "Connection error."."""
    if base_url is None:
        return None, None, {}
    shown = redact_url(base_url)
    if base_url != base_url.strip() or any(c.isspace() for c in base_url):
        raise ValueError(f"base URL {shown!r} holds whitespace (a pasted line end?); write the URL alone")
    if "***" in base_url and shown == base_url:
        base_url = _withheld(base_url)
    match = re.match(r"^(https?)://(?:([^/?#]*)@)?([^/?#@]+)([^?#]*)(?:\?([^#]*))?", base_url, re.IGNORECASE)
    if not match:
        hint = f"; did you mean 'http://{shown}'?" if "://" not in base_url else ""
        raise ValueError(f"base URL {shown!r} must start with http:// or https://{hint}")
    scheme, userinfo, host, path, query = match.groups()
    plain = f"{scheme}://{host}{path}"
    parameters = dict(parse_qsl(query or "", keep_blank_values=True))
    if userinfo is None:
        return plain, None, parameters
    user, _, password = userinfo.partition(":")  # no colon: the user part alone (httpx's reading too)
    return plain, (unquote(user), unquote(password)), parameters


def _withheld(shown: str) -> str:
    """The URL of ``$FINELOGIC_SERVER_URLS`` that ``shown`` (its credentials as ``***``) stands for."""
    meant = {url for url in os.environ.get(SERVER_URLS_ENV, "").split() if redact_url(url) == shown}
    if len(meant) != 1:
        raise ValueError(f"base URL {shown!r} shows *** where its credentials were, and ${SERVER_URLS_ENV} holds "
                         f"{'several URLs' if meant else 'no URL'} it may stand for; give the URL with its "
                         "credentials (`finelogic run -p` hands them to the notebooks it runs)")
    return meant.pop()


def api_key(variable: str) -> str | None:
    """The key in ``$variable`` (None when unset or empty); whitespace or a character that is not printable ASCII
    (which cannot travel in a header) is a ValueError naming the variable, never the key."""
    value = os.environ.get(variable)
    if not value:
        return None
    if any(c.isspace() for c in value):
        where = "ends with" if value.rstrip() != value else "starts with" if value.lstrip() != value else "holds"
        raise ValueError(f"the API key in ${variable} {where} whitespace (a line end copied with it?); "
                         "set it to the key alone")
    odd = [i for i, c in enumerate(value) if not (c.isascii() and c.isprintable())]
    if odd:
        raise ValueError(f"the API key in ${variable} holds {len(odd)} character(s) that are not printable ASCII "
                         f"(first at position {odd[0]}; a pasted quote or dash?); set it to the key alone")
    return value


def _deadline_client(timeout: float, credentials: tuple[str, str] | None = None) -> Any:
    """An httpx client whose every response must arrive whole within ``timeout`` seconds (httpx's timeouts
    apply per read, so a trickling body could hold a request for minutes): ``httpx.ReadTimeout`` past it."""
    import httpx

    class DeadlineStream(httpx.SyncByteStream):
        def __init__(self, inner: Any, deadline: float) -> None:
            self.inner, self.deadline = inner, deadline

        def __iter__(self):
            for chunk in self.inner:
                if time.monotonic() > self.deadline:
                    raise httpx.ReadTimeout(f"the response took longer than {timeout} s in all")
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class DeadlineTransport(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            deadline = time.monotonic() + timeout
            response = super().handle_request(request)
            response.stream = DeadlineStream(response.stream, deadline)
            return response

    return httpx.Client(transport=DeadlineTransport(), timeout=timeout,
                        auth=httpx.BasicAuth(*credentials) if credentials else None)


def _retry_after(headers: Any, limit: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return min(limit, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(limit, max(0.0, float(value)))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return None if parsed is None else min(limit, max(0.0, parsed.timestamp() - time.time()))


def _prompt_tokens(echo: dict[str, Any], prompt_length: int) -> range:
    """Indices of the echoed tokens that belong to the prompt; checks one log-prob per token."""
    tokens, logprobs, offsets = echo["tokens"], echo["token_logprobs"], echo["text_offset"]
    if not len(tokens) == len(logprobs) == len(offsets):
        raise RequestFailed(f"echo returned {len(logprobs)} log-probs and {len(offsets)} offsets for "
                            f"{len(tokens)} tokens: not one log-prob per prompt token")
    n = sum(1 for o in offsets if o < prompt_length)
    if n < 2 or any(lp is None for lp in logprobs[1:n]):
        raise RequestFailed(f"echo returned no log-prob for some of the {n} prompt tokens: {logprobs[:n][:8]}...")
    return range(n)


def _continuation_score(echo: dict[str, Any], prompt_length: int, context_length: int,
                        prompt: str) -> LoglikelihoodResult:
    tokens = _prompt_tokens(echo, prompt_length)
    echoed = "".join(echo["tokens"][i] for i in tokens)
    if echoed != prompt:
        raise RequestFailed(f"echoed tokens do not spell the prompt: {echoed[:60]!r} vs {prompt[:60]!r}")
    offsets, logprobs, tops = echo["text_offset"], echo["token_logprobs"], echo["top_logprobs"]
    # A token counts as continuation once it ends past the context (it carries continuation text).
    chosen = [i for i in tokens if offsets[i] + len(echo["tokens"][i]) > context_length]
    if not chosen or chosen[0] == 0:
        raise RequestFailed("the continuation has no scored token")
    greedy = all(tops and tops[i] and logprobs[i] >= max(tops[i].values()) - 1e-4 for i in chosen)
    return float(sum(logprobs[i] for i in chosen)), len(chosen), bool(greedy)


def alignment_problem(echo: dict[str, Any], prompt: str) -> str | None:
    """Why an echo of ``ALIGNMENT_PROBE``-like text is misaligned, or None: in its predictable second half, a
    correct echo's top alternative at position i is token i, with a log-prob near 0 equal to its reported one."""
    tokens = list(_prompt_tokens(echo, len(prompt)))
    words, logprobs, tops = echo["tokens"], echo["token_logprobs"], echo["top_logprobs"]
    if len(tops) < len(tokens):
        return "no top_logprobs per prompt token"
    half = tokens[len(tokens) // 2:-1]
    best = [max(tops[i], key=tops[i].get) if tops[i] else None for i in half]
    own = sum(b == words[i] for b, i in zip(best, half)) / len(half)
    following = sum(b == words[i + 1] for b, i in zip(best, half)) / len(half)
    preceding = sum(b == words[i - 1] for b, i in zip(best, half)) / len(half)
    mean = sum(logprobs[i] for i in half) / len(half)
    mismatched = sum(1 for i in half if words[i] in tops[i] and abs(tops[i][words[i]] - logprobs[i]) > 1e-3)
    if own < 0.5 or own <= 2 * max(following, preceding):
        return (f"on a repeated text the top alternative at position i is token i in {own:.0%} of positions, "
                f"token i+1 in {following:.0%}, token i-1 in {preceding:.0%}")
    if mismatched > len(half) // 10:
        return f"the log-prob of token i differs from its top-alternatives entry at {mismatched} of {len(half)} positions"
    if mean < -2.5:
        return f"repeated tokens get a mean log-prob of {mean:.2f} (a correct echo gives near 0)"
    return None
