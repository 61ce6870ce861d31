"""`finelogic eval`: a user's models through FineLogic's families in one command, one report, clear errors
before any model work, and a killed run that resumes sending only what was missing."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from finelogic.book.cli import main
from finelogic.evaluate import evaluate
from finelogic.models.llama_server import free_port
from finelogic.models.openai_backend import RequestFailed, ServerUnreachable
from finelogic.runs.accuracy import AccuracyRun
from finelogic.runs.logicmark import LogicMarkRun

REPO = Path(__file__).resolve().parents[1]


class _Server:
    """A stand-in OpenAI-compatible server that answers ``GET /v1/models`` with ``models`` (or 401)."""

    def __init__(self, models=("served-model",), status=200):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                owner.requests += 1
                body = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in models]}
                                  if status == 200 else {"error": {"message": "invalid key"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.requests = 0
        self.http = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_port}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.http.shutdown()


def test_a_server_that_does_not_answer_is_named_before_any_family_runs(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ServerUnreachable, match=f"no server answers at {url}"):
        evaluate([f"openai:m@{url}"], profile="smoke", out=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing was run or written


def test_a_model_the_server_does_not_serve_and_a_refused_key_say_what_to_fix(tmp_path, monkeypatch, capsys):
    server = _Server(models=("llama-3-8b", "qwen-7b"))
    try:
        assert main(["eval", "--model", f"openai:gpt-5@{server.url}", "--profile", "smoke", "--out",
                     str(tmp_path / "a")]) == 2
        error = capsys.readouterr().err
        assert f"{server.url}/ does not serve 'gpt-5'; it serves 'llama-3-8b', 'qwen-7b'" in error
    finally:
        server.close()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    refusing = _Server(status=401)
    try:
        with pytest.raises(RequestFailed, match=r"refused the request \(HTTP 401\): set \$OPENAI_API_KEY"):
            evaluate([f"openai:m@{refusing.url}"], profile="smoke", out=tmp_path / "b")
    finally:
        refusing.close()
    with pytest.raises(ValueError, match="unknown families 'tables'"):
        evaluate(["embedded"], families=["tables"], out=tmp_path / "c")
    with pytest.raises(ValueError, match="model spec 'hf'"):
        evaluate(["hf"], out=tmp_path / "d")


@pytest.mark.slow
def test_the_embedded_model_in_process_gets_its_runs_and_one_self_contained_report(tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", "--model", "embedded", "--profile", "smoke", "--families", "depth", "soundness",
                 "logicmark", "--out", str(out)]) == 0
    # depth and soundness read the accuracy run, which is therefore made too; probing was not asked for
    assert sorted(p.name for p in out.iterdir()) == ["accuracy", "depth", "logicmark", "report.html", "soundness"]
    accuracy = AccuracyRun.read(out / "accuracy")
    items = sum(len(s.problems) for s in accuracy.eval_sets)
    assert accuracy.provenance.models == ("SmolLM2-135M-Instruct",) and len(accuracy.records) == 2 * items > 0
    assert LogicMarkRun.read(out / "logicmark").provenance.models == ("SmolLM2-135M-Instruct",)  # no other rows
    report = (out / "report.html").read_text(encoding="utf-8")
    for heading in ("Overall accuracy (Table 2)", "Accuracy by proof depth on FLD (Table 5, Figure 3)",
                    "Stepwise soundness (Table 3)", "LogicMark: per-hop log-likelihood accuracy"):
        assert f"<h2>{heading}</h2>" in report
    assert "paper: GPT-4o (reported)" in report or "GPT-4o" in report  # the paper's rows beside ours
    assert "Cons. rule" in report and "One response, step by step" in report
    assert report.count("<img") >= 4 and "data:image/png;base64," in report
    assert "<script" not in report and "<link" not in report and 'src="http' not in report  # opens offline


@pytest.mark.server
@pytest.mark.slow
def test_gemma_through_llama_cpp_server_is_evaluated_and_a_killed_run_resumes_with_what_was_missing(tmp_path):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    from finelogic.models.llama_cpp import gemma3_270m_installed, gemma3_270m_path
    from finelogic.models.llama_server import LlamaServer

    if not gemma3_270m_installed():
        pytest.skip("Gemma 3 270M is not installed (the gguf extra)")
    cache = tmp_path / "cache"
    env = {**os.environ, "FINELOGIC_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    with LlamaServer(gemma3_270m_path(), alias="gemma-3-270m", threads=1) as server:
        spec = f"openai:gemma-3-270m@{server.base_url}"
        out = tmp_path / "eval"
        command = [sys.executable, "-m", "finelogic.book.cli", "eval", "--model", spec, "--profile", "smoke",
                   "--families", "accuracy", "--out", str(out)]
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        store = cache / "store.sqlite"
        stored, deadline = 0, time.monotonic() + 300
        while stored < 4 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.5)
            if store.is_file():
                with sqlite3.connect(store, timeout=5) as db:
                    stored = db.execute("SELECT count(*) FROM calls").fetchone()[0]
        child.send_signal(signal.SIGKILL)
        child.wait()
        with sqlite3.connect(store, timeout=5) as db:
            before = db.execute("SELECT count(*) FROM calls").fetchone()[0]
        assert before >= 4 and not (out / "accuracy" / "run.json").exists()  # killed mid-way
        resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    made = AccuracyRun.read(out / "accuracy")
    total = len(made.records)
    assert made.provenance.cache_hits >= before  # what the killed run stored was read, not sent again
    assert made.provenance.model_calls + made.provenance.cache_hits == total
    assert made.provenance.model_calls == total - before
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "gemma-3-270m: no probing: a server does not send hidden states" in report
    assert "<h2>Overall accuracy (Table 2)</h2>" in report
