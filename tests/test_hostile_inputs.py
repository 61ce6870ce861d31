"""Hostile or mistaken inputs (issue 30, classes 4-6): each is refused at once with an error that names the
variable, URL or file at fault, and no secret appears where a URL is shown or stored."""
from __future__ import annotations

import base64
import logging

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
