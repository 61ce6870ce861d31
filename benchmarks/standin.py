"""Stand-in models for the rehearsal (``rehearsal.py``) and the tests: an OpenAI-compatible server on 127.0.0.1,
a **load and code-path simulator**, not a model, and random-init checkpoints (:func:`standin_checkpoints`).

The server answers chat and (echoed, log-prob) completions for any model name, at once and deterministically,
with the *shapes* real replies have per prompt kind (:func:`reply`), and counts what it is sent
(:meth:`StandInServer.counts`). Nothing it says is evidence about any model; every reply says so in its
``system_fingerprint``. ``python benchmarks/standin.py [SAMPLE [TOKENIZER_DIR]]`` serves until terminated
(:class:`StandInProcess` starts it so).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import shutil
import re
import select
import subprocess
import sys
import threading
import urllib.request
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

FINGERPRINT = "finelogic-stand-in"
#: Prompt kinds the server tells apart (the ``kind`` of :meth:`StandInServer.counts`).
KINDS = ("answer", "judge", "logic-lm", "logic-lm-refine", "symbcot-plan", "symbcot-verify", "sel-inf-select",
         "sel-inf-infer", "loglikelihood")
#: Reply shapes of answer prompts and their shares (per mille).
ANSWER_SHAPES = (("proof+marker", 450), ("proof", 100), ("prose+marker", 150), ("prose", 100), ("empty", 40),
                 ("truncated", 120), ("empty-length", 40))
#: A cut reply is at most this many words long, whatever the cap (keeps the cache small; real ones are longer).
TRUNCATED_WORDS = 256

_FACT = re.compile(r"^\s*(fact\d+)\s*:\s*(.+?)\s*$", re.M)
_MARKER = re.compile(r"__[A-Z]+__")


@dataclass
class Tally:
    """What one (model, kind) was sent: ``prompt_chars`` in all, ``sampled_chars`` of them tokenized into
    ``sampled_tokens``; ``messages`` (each adds 4 template tokens)."""

    requests: int = 0
    messages: int = 0
    prompt_chars: int = 0
    sampled_chars: int = 0
    sampled_tokens: int = 0
    cap_tokens: int = 0
    reply_tokens: int = 0

    def prompt_tokens(self, chars_per_token: float) -> int:
        """Tokens sent: the sampled ones exactly, the rest at ``chars_per_token``, plus 4 per message."""
        rest = (self.prompt_chars - self.sampled_chars) / chars_per_token if chars_per_token else 0
        return round(self.sampled_tokens + rest) + 4 * self.messages


class StandInServer:
    """The stand-in server; ``count_tokens`` (default whitespace words) counts a deterministic 1-in-``sample``
    sample of the messages, the rest by characters at its ratio, plus 4 tokens per message for the chat template.
    It listens on ``port`` (0, or that port taken: any free one)."""

    def __init__(self, count_tokens: Callable[[str], int] | None = None, *, sample: int = 16, port: int = 0) -> None:
        # Tokenizing every prompt costs more than answering it: a remembered 1-in-``sample`` sample only.
        self.count_tokens = functools.lru_cache(maxsize=1 << 14)(count_tokens or (lambda text: len(text.split())))
        self.sample = sample
        self._tallies: dict[tuple[str, str], Tally] = defaultdict(Tally)
        self._lock = threading.Lock()
        try:
            self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        except OSError:
            if not port:
                raise
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        """The base URL for :class:`~finelogic.models.openai_backend.OpenAIBackend` (``.../v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def counts(self) -> list[dict[str, Any]]:
        """One dict per (model, kind) seen: ``model, kind, requests, prompt_tokens, cap_tokens, reply_tokens``
        (prompt tokens estimated from the sample of that kind, or of all kinds when it has none)."""
        with self._lock:
            tallies = sorted(self._tallies.items())
            chars = sum(t.sampled_chars for _, t in tallies)
            overall = chars / max(1, sum(t.sampled_tokens for _, t in tallies))
            return [{"model": m, "kind": k, "requests": t.requests,
                     "prompt_tokens": t.prompt_tokens(t.sampled_chars / t.sampled_tokens if t.sampled_tokens else overall),
                     "cap_tokens": t.cap_tokens, "reply_tokens": t.reply_tokens} for (m, k), t in tallies]

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON reply to one request body (exposed for tests)."""
        model = str(body.get("model", ""))
        if path.endswith("/completions") and not path.endswith("/chat/completions"):  # echoed log-probs
            prompt = str(body.get("prompt", ""))
            echo = echo_logprobs(prompt)
            self._tally(model, "loglikelihood", [prompt], int(body.get("max_tokens") or 0), 1)
            return {"id": "stand-in-cmpl", "object": "text_completion", "created": 0, "model": model,
                    "system_fingerprint": FINGERPRINT,
                    "choices": [{"index": 0, "text": prompt + " x", "finish_reason": "length", "logprobs": echo}],
                    "usage": {"prompt_tokens": len(echo["tokens"]) - 1, "completion_tokens": 1,
                              "total_tokens": len(echo["tokens"])}}
        messages = body.get("messages") or []
        text = "\n".join(str(m.get("content") or "") for m in messages)
        kind = prompt_kind(text)
        rng = random.Random(hashlib.sha256(f"{model}\n{json.dumps(messages, sort_keys=True)}".encode()).digest())
        cap = int(body.get("max_tokens") or 0)
        facts = next((m.get("content") for m in reversed(messages) if _FACT.search(str(m.get("content") or ""))), "")
        content, finish = reply(kind, text, rng, cap, facts_text=str(facts))
        self._tally(model, kind, [str(m.get("content") or "") for m in messages], cap,
                    len(content.split()) if content else 0)
        return {"id": f"stand-in-{rng.getrandbits(32):08x}", "object": "chat.completion", "created": 0,
                "model": model, "system_fingerprint": FINGERPRINT,
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}

    def _tally(self, model: str, kind: str, texts: list[str], cap: int, reply_tokens: int) -> None:
        sampled = [t for t in texts if zlib.crc32(t.encode()) % self.sample == 0]
        with self._lock:
            tally = self._tallies[model, kind]
            tally.requests += 1
            tally.messages += len(texts) if kind != "loglikelihood" else 0
            tally.prompt_chars += sum(map(len, texts))
            tally.sampled_chars += sum(map(len, sampled))
            tally.sampled_tokens += sum(self.count_tokens(t) for t in sampled)
            tally.cap_tokens += cap
            tally.reply_tokens += reply_tokens


#: The instruction each kind of chat prompt carries, in the order they are looked for.
_CUES = (("Answer true or false only.", "judge"), ("This translation has an error", "logic-lm-refine"),
         ("Translate a logic problem into formulas", "logic-lm"), ("You are checking a solution.", "symbcot-verify"),
         ("Work in symbols. First write a plan", "symbcot-plan"), ("You are the selection step", "sel-inf-select"),
         ("You are the inference step", "sel-inf-infer"))


def prompt_kind(text: str) -> str:
    """Which of :data:`KINDS` a chat prompt is, from the instructions the package's prompts carry."""
    return next((kind for cue, kind in _CUES if cue in text), "answer")


def reply(kind: str, text: str, rng: random.Random, cap: int, facts_text: str | None = None) -> tuple[str, str]:
    """``(content, finish_reason)`` of a chat reply of ``kind`` to a prompt ``text`` (all its messages): proofs
    and prose with and without a marker, empty and cut replies for answers; ``true``/``false`` and the odd
    unreadable reply for judges; Logic-LM programs (some that do not parse), SymbCoT plans and verifications,
    Sel-Inf selections and inferences. Fact ids come from ``facts_text`` (the last message that lists facts)."""
    facts = list(dict.fromkeys(f for f, _ in _FACT.findall(text if facts_text is None else facts_text)))
    facts = facts or ["fact1", "fact2"]
    markers = sorted(set(_MARKER.findall(text))) or ["__PROVED__", "__DISPROVED__", "__UNKNOWN__"]
    marker = rng.choice(markers)
    if kind == "judge":
        return rng.choices(["true", "false", "True.", "**false**", "I cannot tell."], [55, 35, 5, 3, 2])[0], "stop"
    if kind in ("logic-lm", "logic-lm-refine"):
        return _program(facts, rng), "stop"
    if kind == "symbcot-plan":
        plan = "\n".join(f"{k}. Combine {a} and {b} by modus ponens." for k, (a, b) in enumerate(_pairs(facts, rng), 1))
        return f"Plan:\n{plan}\nSolution:\n{_proof(facts, rng, formal=True)}\n{marker}", "stop"
    if kind == "symbcot-verify":
        return f"Translation check: every formula says what its sentence says.\nStep check: fine.\n{marker}", "stop"
    if kind == "sel-inf-select":
        return " & ".join(rng.sample(facts, min(2, len(facts)))), "stop"
    if kind == "sel-inf-infer":
        return rng.choice(["hypothesis", "¬hypothesis", "The bear is red.", "Something is not blue."]), "stop"
    shape = rng.choices([s for s, _ in ANSWER_SHAPES], [w for _, w in ANSWER_SHAPES])[0]
    if shape == "empty":
        return "", "stop"
    if shape == "empty-length":
        return "", "length"
    if shape == "truncated":
        words = (_proof(facts, rng) + " ") * 40
        return " ".join(words.split()[:max(1, min(cap or TRUNCATED_WORDS, TRUNCATED_WORDS))]), "length"
    body = _proof(facts, rng) if shape.startswith("proof") else rng.choice([
        "Looking at the facts, the hypothesis follows from what we know about the bear.",
        "None of the facts mention the hypothesis directly, so it is hard to say.",
        "The facts contradict the hypothesis: the cat is not kind."])
    return (f"{body}\n\n{marker}" if shape.endswith("+marker") else body), "stop"


def echo_logprobs(prompt: str) -> dict[str, Any]:
    """The ``logprobs`` object of an echoed completion: whitespace-led words as tokens, one log-prob each,
    as a copying model gives them (a word seen before after the same word: -0.05 and top alternative;
    otherwise -4.0, with ``<other>`` on top); the first token has none. Aligned like a correct server."""
    spans = list(re.finditer(r"\s*\S+", prompt))
    words, offsets = [m.group() for m in spans], [m.start() for m in spans]
    seen: set[tuple[str, str]] = set()
    logprobs: list[float | None] = [None]
    tops: list[dict[str, float] | None] = [None]
    for previous, word in zip(words, words[1:]):
        pair = (previous.strip(), word.strip())
        logprobs.append(-0.05 if pair in seen else -4.0)
        tops.append({word: -0.05} if pair in seen else {"<other>": -1.0})
        seen.add(pair)
    return {"tokens": words + [" x"], "token_logprobs": logprobs + [-1.0], "text_offset": offsets + [len(prompt)],
            "top_logprobs": tops + [{" x": -1.0}]}


def _pairs(facts: list[str], rng: random.Random) -> list[tuple[str, str]]:
    return [tuple(rng.sample(facts, 2)) if len(facts) > 1 else (facts[0], facts[0]) for _ in range(rng.randint(1, 3))]


def _proof(facts: list[str], rng: random.Random, formal: bool = False) -> str:
    """A few FLD-notation steps over the prompt's fact ids, ending at the hypothesis or its negation."""
    lines, previous = [], None
    for k, (a, b) in enumerate(_pairs(facts, rng), 1):
        premises = f"{previous} & {a}" if previous else f"{a} & {b}"
        statement = rng.choice(["{A}{a}", "¬{B}{b}", "({C}{a} & {D}{a})"]) if formal else \
            rng.choice(["the bear is red", "something is not blue", "the cat is kind and big"])
        lines.append(f"{premises} -> int{k}: {statement};")
        previous = f"int{k}"
    lines.append(f"{previous} -> {rng.choice(['hypothesis', '¬hypothesis'])};")
    return "\n".join(lines)


def _program(facts: list[str], rng: random.Random) -> str:
    """A Logic-LM translation: one formula per fact and the hypothesis; a quarter do not parse."""
    formulas = ["{A}{a}", "¬{B}{a}", "({A}{a} & {C}{b})", "(x): {A}x -> {B}x", "{C}{b}"]
    lines = [f"{fact}: {rng.choice(formulas)}" for fact in facts]
    lines.append(f"hypothesis: {rng.choice(formulas)}")
    if rng.random() < 0.25:
        lines[rng.randrange(len(lines))] += " &&"  # a syntax error the parser names with its position
    return "Symbols: A, B, C; a, b.\n" + "\n".join(lines)


def _handler(server: StandInServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the client reuses its connections
        # Each response leaves in one write on a socket without Nagle's delay: written unbuffered, the body
        # waited for the client's delayed ACK of the headers.
        wbufsize = -1
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:  # one line per request would drown the logs
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/counts"):
                self._send(200, json.dumps(server.counts()).encode())
            else:
                self._send(404, json.dumps({"error": {"message": f"no such path {self.path}"}}).encode())

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                data, status = json.dumps(server.answer(self.path, body)).encode(), 200
            except Exception as error:  # a bug here must reach the client as a 500, not a hang
                data, status = json.dumps({"error": {"message": repr(error), "type": "stand-in"}}).encode(), 500
            self._send(status, data)

    return Handler


class StandInProcess:
    """A :class:`StandInServer` in an interpreter of its own (its work runs beside the run's), counting tokens
    with ``tokenizer``/``tokenizer.json`` (None: whitespace words), on ``port`` where it is free (a served model's
    cache identity names its URL); SIGTERM when its parent dies, even by SIGKILL."""

    def __init__(self, tokenizer: str | os.PathLike | None = None, *, sample: int = 16, timeout: float = 120,
                 port: int = 0) -> None:
        from llama_server import die_with_parent

        arguments = [str(sample), str(port)] + ([] if tokenizer is None else [str(tokenizer)])
        self._process = subprocess.Popen([sys.executable, __file__, *arguments], stdout=subprocess.PIPE, text=True,
                                         preexec_fn=die_with_parent)
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        line = self._process.stdout.readline().strip() if ready else ""
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"the stand-in server process did not start within {timeout:.0f} s: "
                               f"{line or 'no answer'}")
        self.url = line

    def counts(self) -> list[dict[str, Any]]:
        """:meth:`StandInServer.counts` of the server process."""
        with urllib.request.urlopen(self.url.rsplit("/v1", 1)[0] + "/counts", timeout=60) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()

    def __enter__(self) -> "StandInProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve(sample: str = "16", port: str = "0", tokenizer: str | None = None) -> None:
    """The server process (:class:`StandInProcess`): build the counter, start the server, print its URL
    (or the error) on one line, serve until terminated."""
    try:
        count = None
        if tokenizer is not None:
            # The Rust tokenizer the fast transformers one wraps (same counts, far quicker to load than
            # importing transformers), so the server is up before the run needs it.
            from tokenizers import Tokenizer

            loaded = Tokenizer.from_file(str(Path(tokenizer) / "tokenizer.json"))
            count = lambda text: len(loaded.encode(text, add_special_tokens=False).ids)  # noqa: E731
        server = StandInServer(count, sample=int(sample), port=int(port))
    except Exception as error:  # the parent raises it, naming it
        print(f"error: {type(error).__name__}: {error}", flush=True)
        return
    print(server.url, flush=True)
    server._server.serve_forever(0.05)


def standin_checkpoints(folder: Path, *, count: int = 6) -> list[Path]:
    """``count`` random-init checkpoints (seeds 0..count-1) of the embedded model's architecture cut to
    2 blocks of width 64, made once per folder (``ckpt:<folder>`` specs)."""
    paths = [folder / f"smollm2-arch-2x64-seed{seed}" for seed in range(count)]
    for seed, target in enumerate(paths):
        if (target / "config.json").is_file():
            continue
        from transformers import AutoConfig, AutoTokenizer

        from finelogic.models.embedded import converted_path, random_init_like

        source = converted_path()
        config = AutoConfig.from_pretrained(source)
        config.update({"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
                       "num_key_value_heads": 4, "head_dim": 16})
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        random_init_like(config, seed).save_pretrained(staging, safe_serialization=True)
        AutoTokenizer.from_pretrained(source).save_pretrained(staging)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    return paths


if __name__ == "__main__":
    serve(*sys.argv[1:])
