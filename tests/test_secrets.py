"""Credentials in a server's URL (``user:password@``, a password holding ``@``, ``?api_key=``) reach the server
and nothing else: no result file, notebook (papermill's injected parameters included), report, built page or
log line shows them; each shows the spec with ``***`` in their place."""
from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from finelogic.book.cli import main
from finelogic.book.runner import NotebookFailed, run_notebooks
from finelogic.config import redact_url
from finelogic.models.openai_backend import ALIGNMENT_PROBE, RequestFailed
from finelogic.models.spec import open_model, parse_model
from model_fixtures import fake_server  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "p@ss-PLANTED-pw"  # an unencoded "@" inside
QUERY_KEY = "PLANTED-qkey"
PLANTED = "PLANTED"


def spec_for(server, model: str = "fake-model") -> str:
    """``openai:<model>@http://alice:<PASSWORD>@<host>/v1?api_key=<QUERY_KEY>``: both credentials planted."""
    return f"openai:{model}@" + server.url.replace("http://", f"http://alice:{PASSWORD}@") + f"?api_key={QUERY_KEY}"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def leaks(folder: Path) -> list[str]:
    """Every file under ``folder`` that holds the planted marker, as a secret scan reads them."""
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and PLANTED.encode() in p.read_bytes())


def test_redact_url_finds_credentials_anywhere_in_a_text():
    assert redact_url("openai:m@http://user:p@ss@host:8000/v1?api_key=K") == \
        "openai:m@http://user:***@host:8000/v1?api_key=***"
    assert redact_url("POST http://h/v1/chat/completions?x-api-key=K&api-version=2&token=T \"HTTP/1.1 200 OK\"") == \
        "POST http://h/v1/chat/completions?x-api-key=***&api-version=2&token=*** \"HTTP/1.1 200 OK\""
    assert redact_url("a,openai:m@https://h/v1?key=K,hf:gpt2") == "a,openai:m@https://h/v1?key=***,hf:gpt2"
    assert redact_url("https://h/v1?access_token=T#part") == "https://h/v1?access_token=***#part"
    assert redact_url("https://h/v1?monkey=1&keyword=2") == "https://h/v1?monkey=1&keyword=2"  # not credentials


def test_a_spec_s_url_starts_at_the_first_at_before_a_scheme():
    spec = parse_model("openai:NAME@http://user:p@ss@host:8000/v1?api_key=K")
    assert (spec.name, spec.model, spec.base_url) == ("NAME", "NAME", "http://user:p@ss@host:8000/v1?api_key=K")
    assert "base_url='http://user:***@host:8000/v1?api_key=***'" in repr(spec) and "p@ss" not in repr(spec)
    named = parse_model("openai:org/model@v2@https://host/v1")  # a model name may hold "@" too
    assert (named.model, named.base_url) == ("org/model@v2", "https://host/v1")
    assert parse_model("openai:m@http://127.0.0.1:8000/v1").base_url == "http://127.0.0.1:8000/v1"
    assert parse_model("openai:m").base_url is None
    assert parse_model("openai:m@127.0.0.1:8000/v1").base_url == "127.0.0.1:8000/v1"  # refused when opened


def test_a_password_with_an_at_and_a_query_key_reach_the_server_and_no_log_error_or_store(fake_server, tmp_path,
                                                                                          monkeypatch, caplog):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    caplog.set_level(logging.DEBUG)  # httpx's and openai's request lines included
    backend = open_model(spec_for(fake_server))
    assert backend.generate([[{"role": "user", "content": "hello"}]]) == ["answer to hello"]
    assert fake_server.authorizations == [basic("alice", PASSWORD)]  # the whole password, "@" included
    assert fake_server.paths == [f"/v1/chat/completions?api_key={QUERY_KEY}"]
    fake_server.script["refused"] = ["400"]
    with pytest.raises(RequestFailed) as caught:
        backend.generate([[{"role": "user", "content": "refused"}]])
    shown = repr(backend.backend) + str(caught.value)
    assert "alice:***@127.0.0.1" in shown and "api_key=***" in shown and PLANTED not in shown
    assert "/v1/chat/completions?api_key=***" in caplog.text and PLANTED not in caplog.text
    assert leaks(tmp_path) == []


def test_credentials_in_openai_base_url_are_sent_as_basic_authentication_never_logged(fake_server, monkeypatch,
                                                                                     caplog):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.url.replace("http://", f"http://alice:{PASSWORD}@"))
    caplog.set_level(logging.DEBUG)
    backend = open_model("openai:fake-model", cache=False)
    assert backend.generate([[{"role": "user", "content": "hi"}]]) == ["answer to hi"]
    assert fake_server.authorizations == [basic("alice", PASSWORD)]
    assert "127.0.0.1" in caplog.text and PLANTED not in caplog.text + repr(backend)


def test_finelogic_eval_records_and_reports_the_spec_with_its_credentials_as_stars(fake_server, tmp_path,
                                                                                  monkeypatch, caplog, capsys):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    caplog.set_level(logging.DEBUG)
    out = tmp_path / "eval"
    assert main(["eval", "--model", spec_for(fake_server), "--profile", "smoke", "--families", "accuracy",
                 "logicmark", "--out", str(out)]) == 0
    assert basic("alice", PASSWORD) in fake_server.authorizations
    assert any(path.endswith(f"?api_key={QUERY_KEY}") for path in fake_server.paths)
    shown = redact_url(spec_for(fake_server))
    assert shown.endswith("/v1?api_key=***") and "alice:***@127.0.0.1" in shown
    for family in ("accuracy", "logicmark"):
        recorded = json.loads((out / family / "run.json").read_text())["provenance"]
        assert recorded["models"] == ["fake-model"]
        assert shown in json.dumps(recorded["settings"])
    report = (out / "report.html").read_text(encoding="utf-8")
    assert f"<title>FineLogic evaluation: {shown}</title>" in report
    assert f"<h1>FineLogic evaluation of {shown}</h1>" in report
    assert leaks(tmp_path) == []
    printed = capsys.readouterr()
    assert PLANTED not in printed.out + printed.err + caplog.text


def _page(path: Path, body: str) -> None:
    """A notebook shaped like the book's: a parameters cell naming models, then a family run."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "tiny"\nseed = 0\nextra_models = []')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


LOGICMARK_PAGE = """\
import logging
logging.basicConfig(level=logging.DEBUG)
from finelogic.runs import logicmark
run = logicmark.run(profile, seed=seed, extra_models=extra_models, embedded=False, random_control=False, gemma=False)
run.write()
print(run.provenance.models, run.provenance.settings["extra_models"])"""


@pytest.mark.slow
def test_a_notebook_parameter_s_credentials_reach_the_kernel_but_not_the_notebook(fake_server, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _page(src / "page.ipynb", LOGICMARK_PAGE)
    run_notebooks("smoke", ["page"], source_dir=src, output_dir=out, parameters={"extra_models": spec_for(fake_server)})
    assert basic("alice", PASSWORD) in fake_server.authorizations  # the kernel had the credentials
    assert all(path.endswith(f"?api_key={QUERY_KEY}") for path in fake_server.paths)
    page = nbformat.read(out / "page.ipynb", as_version=4)
    injected = next(c for c in page.cells if "injected-parameters" in c.metadata.get("tags", []))
    shown = redact_url(spec_for(fake_server))
    assert f'extra_models = "{shown}"' in injected.source
    assert page.metadata.papermill.parameters["extra_models"] == shown
    assert f"('fake-model',) ['{shown}']" in page.cells[-1].outputs[-1]["text"]
    assert leaks(tmp_path) == []
    assert "FINELOGIC_SERVER_URLS" not in os.environ  # handed to the kernel, not left in this process


@pytest.mark.slow
def test_a_planted_secret_reaches_no_file_page_or_log_of_a_run_a_crash_and_a_build(fake_server, tmp_path,
                                                                                    monkeypatch):
    """``finelogic eval`` (its stderr logs at INFO, httpx's request lines included), a run against a server that
    is not there, a notebook whose server refuses it, and the book built from that notebook: every file any of
    them wrote and everything they printed is free of the planted password and query key."""
    from llama_server import free_port

    for name, value in {"FINELOGIC_CACHE": tmp_path / "cache", "FINELOGIC_RESULTS": tmp_path / "results",
                        "FINELOGIC_OFFLINE": "1"}.items():  # every file written lands in tmp_path
        monkeypatch.setenv(name, str(value))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "finelogic.book.cli"]
    printed = []

    def finelogic(*args: str) -> int:
        done = subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=600)
        printed.append(done.stdout + done.stderr)
        return done.returncode

    served = finelogic("eval", "--model", spec_for(fake_server), "--profile", "smoke", "--out", str(tmp_path / "eval"))
    nowhere = f"openai:fake-model@http://alice:{PASSWORD}@127.0.0.1:{free_port()}/v1?api_key={QUERY_KEY}"
    crashed = finelogic("eval", "--model", nowhere, "--profile", "smoke", "--out", str(tmp_path / "crashed"))
    book = tmp_path / "book"
    (book / "src").mkdir(parents=True)
    _page(book / "src" / "page.ipynb", LOGICMARK_PAGE)
    fake_server.script[ALIGNMENT_PROBE] = ["401"]  # the server refuses the kernel's first request
    with pytest.raises(NotebookFailed) as failed:
        run_notebooks("smoke", ["page"], source_dir=book / "src", output_dir=book / "generated",
                      parameters={"extra_models": spec_for(fake_server, "other-model")})
    printed.append(str(failed.value))
    (book / "_config.yml").write_text("title: secrets\nexecute:\n  execute_notebooks: 'off'\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: generated/page\n")
    built = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(book)], env=env,
                           capture_output=True, text=True, timeout=600)
    printed.append(built.stdout + built.stderr)

    assert leaks(tmp_path) == []
    assert [PLANTED in text for text in printed] == [False] * len(printed)
    assert served == 0, printed[0][-3000:]
    assert basic("alice", PASSWORD) in fake_server.authorizations
    assert "HTTP Request: POST" in printed[0] and "api_key=***" in printed[0]  # logged, without the key
    assert crashed == 2 and "error: no server answers at http://alice:***@127.0.0.1" in printed[1]
    assert "RequestFailed" in printed[2] and "HTTP 401" in printed[2]
    page = (book / "_build" / "html" / "generated" / "page.html").read_text(encoding="utf-8")
    assert "alice:***@127.0.0.1" in page and "HTTP 401" in page  # the parameters and the failure are shown
