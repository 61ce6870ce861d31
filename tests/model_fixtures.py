"""Shared fixtures for the model tests; import them explicitly (``from model_fixtures import ...``).

The embedded model is converted once per machine into ``<repo>/.cache/test`` (gitignored), so only
the first test run pays the 20-60 s GGUF de-quantization.
"""
from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_CACHE = REPO / ".cache" / "test"


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """Points FINELOGIC_CACHE at the reused test cache for the whole session."""
    previous = os.environ.get("FINELOGIC_CACHE")
    os.environ["FINELOGIC_CACHE"] = str(TEST_CACHE)
    TEST_CACHE.mkdir(parents=True, exist_ok=True)
    yield TEST_CACHE
    if previous is None:
        os.environ.pop("FINELOGIC_CACHE", None)
    else:
        os.environ["FINELOGIC_CACHE"] = previous


@pytest.fixture(scope="session")
def hf_backend(model_cache):
    """The embedded SmolLM2-135M-Instruct in float32 on CPU."""
    import torch

    from finelogic.models import HFBackend

    torch.set_num_threads(1)  # the test machines share two cores; more threads only spin
    return HFBackend(batch_size=4)


# --------------------------------------------------------------------------- fake OpenAI server


class FakeOpenAI:
    """A scripted OpenAI-compatible server on 127.0.0.1 for fault injection.

    ``script[prompt]`` lists what successive requests for that prompt get: ``"ok"``, ``"429"``
    (with ``Retry-After: retry_after``), ``"500"``, ``"slow"`` (answers after ``slow_seconds``),
    ``"malformed"`` (200 with broken JSON), ``"deep"`` (200 with JSON nested 100,000 deep), ``"drop"``
    (closes the connection unanswered),
    ``"400"``/``"401"`` (error bodies that quote the Authorization header, as careless servers do),
    ``"trickle"`` (a whole answer sent one byte every ``trickle_seconds``), ``"html"`` (200 with a web
    page), ``"no_choices"`` (200 with ``choices: []``), ``"null"`` (content null, finish_reason ``stop``),
    ``"null_length"`` (content null, finish_reason ``length``, as a reasoning model that spent its cap),
    ``"other_model"`` (the reply names another model than the one asked for), ``"huge"`` (a 5 MB reply,
    whatever the cap). Unscripted requests get ``"ok"``. ``counts[prompt]`` counts requests (every attempt);
    ``bodies`` keeps every request body, ``paths`` every request's path with its query.

    Chat answers are ``"answer to <last user message>"``. Completions with ``echo`` split the
    prompt into whitespace-led words and play a copying model: a word whose (previous word, word)
    pair occurred earlier gets log-prob -0.05 and is the top alternative; any other word gets -4.0
    with ``"<other>"`` (-1.0) as top alternative. ``shifted=True`` reproduces an off-by-one echo
    (position i reports position i+1's numbers); ``short_logprobs=True`` drops the last log-prob.
    """

    def __init__(self) -> None:
        self.script: dict[str, list[str]] = {}
        self.counts: Counter[str] = Counter()
        self.authorizations: list[str] = []
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.retry_after = "0"
        self.slow_seconds = 1.0
        self.trickle_seconds = 0.2
        self.delay = 0.0
        self.shifted = False
        self.short_logprobs = False
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, prompt: str, authorization: str, body: dict) -> str:
        with self._lock:
            self.counts[prompt] += 1
            self.authorizations.append(authorization)
            self.bodies.append(body)
            queue = self.script.get(prompt)
            return queue.pop(0) if queue else "ok"

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                fake.paths.append(self.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body.get("prompt") or body["messages"][-1]["content"]
                authorization = self.headers.get("Authorization", "")
                behaviour = fake._next(prompt, authorization, body)
                if fake.delay:
                    time.sleep(fake.delay)
                if behaviour == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if behaviour == "slow":
                    time.sleep(fake.slow_seconds)
                if behaviour == "malformed":
                    return self._send(200, b'{"id": "x", "choices": [', {})
                if behaviour == "deep":  # valid JSON, nested deeper than Python's reader follows
                    return self._send(200, b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", {})
                if behaviour == "html":
                    return self._send(200, b"<html><body>502 Bad Gateway</body></html>", {}, "text/html")
                if behaviour in ("no_choices", "null", "null_length"):
                    answer = fake._chat(body, prompt)
                    if behaviour == "no_choices":
                        answer["choices"] = []
                    else:
                        answer["choices"][0]["message"]["content"] = None
                        answer["choices"][0]["finish_reason"] = "length" if behaviour == "null_length" else "stop"
                    return self._send(200, json.dumps(answer).encode(), {})
                if behaviour in ("other_model", "huge"):
                    answer = fake._chat(body, prompt)
                    if behaviour == "other_model":
                        answer["model"] = "some-other-model"
                    else:
                        answer["choices"][0]["message"]["content"] = "x" * 5_000_000
                    return self._send(200, json.dumps(answer).encode(), {})
                if behaviour == "trickle":
                    data = json.dumps(fake._chat(body, prompt)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    try:
                        for i in range(len(data)):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(fake.trickle_seconds)
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client gave up, as it should
                    return
                if behaviour in ("429", "500", "400", "401"):
                    message = {"429": "rate limited", "500": "server exploded",
                               "400": f"bad request (you sent {authorization})",
                               "401": f"invalid key {authorization}"}[behaviour]
                    headers = {"Retry-After": fake.retry_after} if behaviour == "429" else {}
                    payload = {"error": {"message": message, "type": "error", "code": behaviour}}
                    return self._send(int(behaviour), json.dumps(payload).encode(), headers)
                answer = fake._chat(body, prompt) if "messages" in body else fake._completion(body, prompt)
                self._send(200, json.dumps(answer).encode(), {})

            def _send(self, status, data, headers, content_type="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _chat(self, body: dict, prompt: str) -> dict:
        return {"id": "chat-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": f"answer to {prompt}"}}],
                "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 3, "total_tokens": 0}}

    def _completion(self, body: dict, prompt: str) -> dict:
        words = re.findall(r"\s*\S+", prompt)
        offsets = [m.start() for m in re.finditer(r"\s*\S+", prompt)]
        seen: set[tuple[str, str]] = set()
        logprobs: list[float | None] = [None]
        tops: list[dict | None] = [None]
        for previous, word in zip(words, words[1:]):
            pair = (previous.strip(), word.strip())
            if pair in seen:
                logprobs.append(-0.05)
                tops.append({word: -0.05})
            else:
                logprobs.append(-4.0)
                tops.append({"<other>": -1.0})
            seen.add(pair)
        if self.shifted:
            logprobs, tops = logprobs[1:] + [-1.0], tops[1:] + [{" x": -1.0}]
        words, offsets = words + [" x"], offsets + [len(prompt)]
        logprobs, tops = logprobs + [-1.0], tops + [{" x": -1.0}]
        if self.short_logprobs:
            logprobs = logprobs[:-2]
        return {"id": "cmpl-1", "object": "text_completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "text": prompt + " x", "finish_reason": "length",
                             "logprobs": {"tokens": words, "token_logprobs": logprobs, "text_offset": offsets,
                                          "top_logprobs": tops}}],
                "usage": {"prompt_tokens": len(words) - 1, "completion_tokens": 1, "total_tokens": len(words)}}


@pytest.fixture
def fake_server():
    server = FakeOpenAI().start()
    yield server
    server.stop()
