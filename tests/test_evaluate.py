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
from data_fixtures import write_published_layout

from finelogic.book.cli import main
from finelogic.evaluate import evaluate
from llama_server import free_port
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


EVAL_ACCURACY = ["eval", "--model", "embedded", "--profile", "smoke", "--families", "accuracy"]


@pytest.mark.parametrize("given", ["--data-dir", "FINELOGIC_DATA_DIR"])
def test_a_real_file_missing_from_the_data_folder_stops_the_eval_naming_it(tmp_path, monkeypatch, capsys, given):
    data = write_published_layout(tmp_path / "data")
    (data / "prontoqa" / "dev.json").unlink()
    if given == "FINELOGIC_DATA_DIR":
        monkeypatch.setenv("FINELOGIC_DATA_DIR", str(data))
    chosen = ["--data-dir", str(data)] if given == "--data-dir" else []
    assert main([*EVAL_ACCURACY, *chosen, "--out", str(tmp_path / "out")]) == 2  # before any model is loaded
    error = capsys.readouterr().err
    assert f"error: no prontoqa files in {data}: expected {data}/prontoqa/dev.json" in error
    assert f"The data folder {data} must hold every real test set" in error
    assert not (tmp_path / "out" / "report.html").exists()


def test_a_multi_logieval_file_missing_from_the_data_folder_stops_the_eval_naming_it(tmp_path, capsys):
    data = write_published_layout(tmp_path / "data")
    gone = data / "multi_logieval" / "data" / "d4_Data" / "pl" / "HS_MT_DS_MP.json"
    gone.unlink()
    assert main([*EVAL_ACCURACY, "--data-dir", str(data), "--out", str(tmp_path / "out")]) == 2
    assert f"1 published file(s) missing, so fewer items than documented: {gone}." in capsys.readouterr().err


class _Says:
    """A backend that answers every conversation with ``reply``."""

    def __init__(self, reply):
        from finelogic.models.base import BackendStats

        self.stats = BackendStats()
        self.reply = reply

    def generate(self, conversations, config=None):
        self.stats.add(calls=1)
        return [self.reply] * len(conversations)


def test_the_report_and_the_books_provenance_name_each_test_sets_data_and_the_generated_stand_ins(tmp_path):
    from finelogic.book.provenance import provenance_box
    from finelogic.book.report import write_report
    from finelogic.evaluate import Evaluation
    from finelogic.runs import accuracy

    run = accuracy.run("smoke", backends={"embedded": _Says("__PROVED__")}, settings=["Direct"])  # no data folder
    made = Evaluation(("embedded",), "smoke", tmp_path, runs={"accuracy": run})
    first_lines = write_report(made, tmp_path / "report.html").read_text(encoding="utf-8").split("<h2>")[0]
    assert ("<p><strong>Data</strong>: FLD: generated (fld, finelogic FLD-style generator); FOLIO: not present; "
            "Multi-LogiEval: not present; ProntoQA: generated stand-in (finelogic ProntoQA-style generator).</p>"
            in first_lines)
    box = provenance_box("02_accuracy.ipynb", run.provenance).data
    assert ("- **data**: fld: `generated (fld, finelogic FLD-style generator)`; folio: `not present`; multi_logieval: "
            "`not present`; prontoqa: `generated stand-in (finelogic ProntoQA-style generator)`\n") in box


def test_a_folder_holding_other_files_is_refused_naming_it_before_any_family_runs(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    assert main(["eval", "--model", "embedded", "--profile", "smoke", "--families", "accuracy", "--out", str(out)]) == 2
    assert (f"error: {out} holds files that are not a finelogic evaluation's (it has no eval.json: notes.txt); "
            "give another --out, or empty that folder") in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


@pytest.mark.slow
def test_an_eval_into_the_folder_of_another_is_refused_and_the_same_one_again_replaces_it(tmp_path, capsys):
    """A second eval into the same --out used to leave the first model's families beside its own, and its
    report named only the new model."""
    out = tmp_path / "eval"

    def finelogic_eval(model, *families):
        return main(["eval", "--model", model, "--profile", "smoke", "--families", *families, "--out", str(out)])

    assert finelogic_eval("embedded", "accuracy") == 0
    written = {p.name: p.read_bytes() for p in (out / "accuracy").iterdir()}
    capsys.readouterr()
    assert finelogic_eval("random-init:1", "accuracy") == 2
    assert (f"error: {out} holds another evaluation (models SmolLM2-135M-Instruct, profile smoke, seed 0, families "
            f"accuracy); give another --out, or remove that folder (rm -r {out}) to replace it with this one"
            in capsys.readouterr().err)
    assert finelogic_eval("embedded", "depth") == 2  # the same model, other families: another evaluation too
    assert sorted(p.name for p in out.iterdir()) == ["accuracy", "eval.json", "report.html"]
    assert {p.name: p.read_bytes() for p in (out / "accuracy").iterdir()} == written  # left as it was
    assert finelogic_eval("embedded", "accuracy") == 0  # the same evaluation again: written anew, from the store
    assert AccuracyRun.read(out / "accuracy").provenance.model_calls == 0
    assert sorted(p.name for p in out.iterdir()) == ["accuracy", "eval.json", "report.html"]


@pytest.mark.slow
def test_the_embedded_model_in_process_gets_its_runs_and_one_self_contained_report(tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", "--model", "embedded", "--profile", "smoke", "--families", "depth", "soundness",
                 "logicmark", "--out", str(out)]) == 0
    # depth and soundness read the accuracy run, which is therefore made too; probing was not asked for
    assert sorted(p.name for p in out.iterdir()) == ["accuracy", "depth", "eval.json", "logicmark", "report.html",
                                                     "soundness"]
    accuracy = AccuracyRun.read(out / "accuracy")
    items = sum(len(s.problems) for s in accuracy.eval_sets)
    assert accuracy.provenance.models == ("SmolLM2-135M-Instruct",) and len(accuracy.records) == 2 * items > 0
    assert LogicMarkRun.read(out / "logicmark").provenance.models == ("SmolLM2-135M-Instruct",)  # no other rows
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "ProntoQA: generated stand-in" in report.split("<h2>")[0]  # offline, no data folder: named first
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
    from llama_server import LlamaServer

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
