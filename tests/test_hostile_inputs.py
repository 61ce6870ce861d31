"""Hostile or mistaken inputs (issue 30, classes 4-6): each is refused at once with an error that names the
variable, URL or file at fault, and no secret appears where a URL is shown or stored."""
from __future__ import annotations

import base64
import json
import logging
import os

import pytest

from finelogic.config import cache_dir, results_dir
from finelogic.models.cache import CachedBackend
from finelogic.models.openai_backend import OpenAIBackend, RequestFailed
from model_fixtures import fake_server  # noqa: F401  (fixture)


# ---------------------------------------------------------------------------------------------- environment
@pytest.mark.parametrize("variable, where", [("FINELOGIC_CACHE", cache_dir), ("FINELOGIC_RESULTS",
                                                                             lambda: results_dir("smoke"))])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_folder_variable_is_an_error_naming_it_not_the_working_folder(tmp_path, monkeypatch, variable,
                                                                                where, value):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=f"{variable} is set but empty; unset it"):
        where()
    assert list(tmp_path.iterdir()) == []  # nothing written where the user happens to stand


def test_a_base_url_without_a_scheme_fails_at_once_saying_what_to_write(fake_server):
    bare = fake_server.url.removeprefix("http://")
    with pytest.raises(ValueError, match=f"base URL '{bare}' must start with http:// or https://; "
                                         f"did you mean 'http://{bare}'"):
        OpenAIBackend("fake-model", base_url=bare)
    with pytest.raises(ValueError, match="holds whitespace"):
        OpenAIBackend("fake-model", base_url=fake_server.url + "\n")
    assert sum(fake_server.counts.values()) == 0


@pytest.mark.parametrize("key, what", [("sk-live-0123456789\n", "ends with whitespace"),
                                       ("sk-live 0123456789", "holds whitespace"),
                                       ("sk-live-0123456789\u201d", "not printable ASCII (first at position 18")])
def test_an_api_key_with_whitespace_or_other_characters_fails_before_any_request(fake_server, monkeypatch, key, what):
    monkeypatch.setenv("FINELOGIC_TEST_KEY", key)
    with pytest.raises(ValueError, match=r"the API key in \$FINELOGIC_TEST_KEY") as caught:
        OpenAIBackend("fake-model", base_url=fake_server.url, api_key_env="FINELOGIC_TEST_KEY")
    assert what in str(caught.value) and "0123456789" not in str(caught.value)
    assert sum(fake_server.counts.values()) == 0


# ---------------------------------------------------------------------------------------------- secrets
def test_redact_url_hides_the_password_or_token_and_keeps_the_rest():
    from finelogic.config import redact_url

    assert redact_url("http://user:KEY@host:8000/v1") == "http://user:***@host:8000/v1"
    assert redact_url("https://KEY@host/v1") == "https://***@host/v1"
    assert redact_url("https://host/v1?next=a@b") == "https://host/v1?next=a@b"
    assert redact_url(None) is None


def test_credentials_in_a_base_url_are_sent_but_never_shown_logged_or_stored(fake_server, tmp_path, caplog):
    secret = "KEY-0123456789abcdef"
    url = fake_server.url.replace("http://", f"http://alice:{secret}@")
    caplog.set_level(logging.DEBUG)  # httpx's request lines included
    backend = CachedBackend(OpenAIBackend("fake-model", base_url=url, max_attempts=1), tmp_path / "store.sqlite",
                            "openai:fake-model")
    assert backend.generate([[{"role": "user", "content": "hello"}]]) == ["answer to hello"]
    assert fake_server.authorizations == ["Basic " + base64.b64encode(f"alice:{secret}".encode()).decode()]
    fake_server.script["refused"] = ["400"]
    with pytest.raises(RequestFailed) as caught:
        backend.generate([[{"role": "user", "content": "refused"}]])
    shown = repr(backend.backend) + str(caught.value)
    assert "alice:***@127.0.0.1" in shown and secret not in shown
    assert secret not in caplog.text and "127.0.0.1" in caplog.text
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite*"))
    assert secret.encode() not in stored


def test_a_secret_in_extra_body_reaches_the_server_but_no_model_identity_or_provenance(fake_server, tmp_path,
                                                                                       monkeypatch):
    import json

    from finelogic.models.spec import open_model, parse_model
    from finelogic.runs.provenance import Provenance

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    secret = "tok-0123456789abcdef"
    entry = {"kind": "openai", "model": "fake-model", "base_url": fake_server.url.replace("http://", f"http://bob:{secret}@"),
             "options": {"extra_body": {"router_token": secret, "repeat_penalty": 1.0}}}
    backend = open_model(entry)
    assert backend.generate([[{"role": "user", "content": "hi"}]]) == ["answer to hi"]
    assert fake_server.bodies[-1]["router_token"] == secret  # sent
    spec = parse_model(entry)
    other = parse_model({**entry, "options": {"extra_body": {"router_token": "another", "repeat_penalty": 1.0}}})
    assert secret not in spec.model_id and spec.model_id != other.model_id  # still part of the identity
    recorded = json.dumps(Provenance("accuracy", "smoke", 0, settings={"models": [entry]},
                                     model_ids=(spec.model_id,)).as_dict())
    assert secret not in recorded and "bob:***@" in recorded and "sha256:" in recorded


# ---------------------------------------------------------------------------------------------- data files
CARD = {"id": "symbolic_00042", "domain": "Symbolic", "context": "If:\na = b\nb != c\na = d\n\nThen",
        "options": ["a != c", "d = c", "b = d", "a = c"], "answer_index": 0, "answer": "a != c", "hop_depth": 2}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No hub, no user data folder: a refused file must not be replaced by anything fetched."""
    monkeypatch.setenv("FINELOGIC_OFFLINE", "1")
    monkeypatch.delenv("FINELOGIC_DATA_DIR", raising=False)


def _load_in_time(*args, **kwargs):
    """load_dataset(*args), in a thread given 10 s: a read that blocks (a FIFO) fails the test, not the suite."""
    import threading

    from finelogic.data.datasets import load_dataset

    outcome = []

    def load():
        try:
            outcome.append(load_dataset(*args, **kwargs))
        except Exception as error:  # noqa: BLE001 (the test inspects it)
            outcome.append(error)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert outcome, "the load blocked"
    return outcome[0]


def _lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("hostile", ["fifo", "dangling link", "link loop"])
def test_a_fifo_or_broken_link_in_place_of_prontoqas_file_is_an_error_naming_it_not_the_stand_in(tmp_path, hostile):
    from finelogic.data.datasets import DatasetFormatError

    (tmp_path / "prontoqa").mkdir()
    target = tmp_path / "prontoqa" / "dev.json"
    if hostile == "fifo":
        os.mkfifo(target)
    elif hostile == "dangling link":
        target.symlink_to(tmp_path / "moved-away.json")
    else:
        target.symlink_to(target)
    error = _load_in_time("prontoqa", tmp_path)
    assert isinstance(error, DatasetFormatError) and str(error).startswith(f"{target}: ")
    assert {"fifo": "a FIFO (named pipe), not a regular file", "dangling link": "moved-away.json', which does not exist",
            "link loop": "a loop of symbolic links"}[hostile] in str(error)


def test_a_dangling_folio_file_is_an_error_not_a_fall_back_to_the_other_copy(tmp_path):
    from finelogic.data.datasets import DatasetFormatError

    folio = tmp_path / "folio"
    (folio / "Logic-LLM_data_FOLIO").mkdir(parents=True)
    (folio / "Logic-LLM_data_FOLIO" / "dev.json").write_text("[]")  # the other copy, which must not be read
    (folio / "folio-validation.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    error = _load_in_time("folio", tmp_path)
    assert isinstance(error, DatasetFormatError) and "folio-validation.jsonl: a symbolic link to" in str(error)


def test_a_fifo_named_json_among_fld_files_is_refused_instead_of_blocking(tmp_path):
    from finelogic.data.datasets import DatasetFormatError

    os.mkfifo(tmp_path / "z-pipe.json")
    error = _load_in_time("fld", tmp_path)
    assert isinstance(error, DatasetFormatError) and f"{tmp_path / 'z-pipe.json'}: a FIFO" in str(error)


def test_two_items_with_one_id_are_an_error_naming_both(tmp_path):
    from finelogic.data.datasets import DatasetFormatError

    path = _lines(tmp_path / "cards.jsonl", [CARD, {**CARD, "answer_index": 1, "answer": "d = c"}])
    error = _load_in_time("logicmark", path)
    assert isinstance(error, DatasetFormatError)
    assert str(error) == f"{path} line 2: id 'symbolic_00042' is already the id of {path} line 1"
    kept = _load_in_time("logicmark", path, strict=False)
    assert [p.id for p in kept] == ["symbolic_00042"] and kept.skipped[0][0] == f"{path} line 2"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_number_is_an_error_never_an_id_like_nan(tmp_path, constant):
    from finelogic.data.datasets import DatasetFormatError

    path = tmp_path / "cards.jsonl"
    path.write_text(json.dumps(CARD).replace('"symbolic_00042"', constant) + "\n")
    error = _load_in_time("logicmark", path)
    assert isinstance(error, DatasetFormatError)
    assert str(error).startswith(f"{path} line 1: holds the number {constant}, which is not JSON")


def test_json_nested_100000_deep_is_an_error_naming_the_file(tmp_path):
    from finelogic.data.datasets import DatasetFormatError

    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    error = _load_in_time("logicmark", path)
    assert isinstance(error, DatasetFormatError) and str(error).startswith(f"{path}: JSON nested too deeply")


def test_a_string_of_millions_of_characters_is_an_error_naming_the_item(tmp_path):
    from finelogic.data.datasets import DatasetFormatError

    path = _lines(tmp_path / "cards.jsonl", [CARD, {**CARD, "id": "huge", "context": "a = b\n" * 500_000}])
    error = _load_in_time("logicmark", path)
    assert isinstance(error, DatasetFormatError)
    assert str(error).startswith(f"{path} line 2: a string of 3,000,000 characters (at most 1,000,000)")


def test_a_server_reply_nested_too_deep_is_retried_like_any_unreadable_reply(fake_server):
    backend = OpenAIBackend("fake-model", base_url=fake_server.url, max_attempts=3, backoff_base=0.01)
    fake_server.script["deep"] = ["deep", "ok"]
    assert backend.generate([[{"role": "user", "content": "deep"}]]) == ["answer to deep"]
    fake_server.script["hopeless"] = ["deep"] * 3
    with pytest.raises(RequestFailed, match=r"failed after 3 attempts.*unreadable response \(RecursionError"):
        backend.generate([[{"role": "user", "content": "hopeless"}]])
