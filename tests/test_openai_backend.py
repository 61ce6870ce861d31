"""OpenAIBackend against a scripted local server, behind the one cache (CachedBackend): warm reruns,
retries, failures, secrets, resumability, and cache keys that name the model and its server."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from finelogic.models import GenerationConfig
from finelogic.models.cache import CachedBackend
from finelogic.models.openai_backend import LogprobAlignmentError, OpenAIBackend, RequestFailed
from finelogic.models.spec import open_model, parse_model
from model_fixtures import REPO, FakeOpenAI, fake_server  # noqa: F401  (fixture)


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]


def cached(server, path, model_id="openai:fake-model", **options) -> CachedBackend:
    """The server's backend behind the store file ``path`` (as open_model builds it, with our own path)."""
    return CachedBackend(OpenAIBackend("fake-model", base_url=server.url, **options), path, model_id)


@pytest.fixture
def backend(fake_server, tmp_path):
    """A backend with tiny time-outs and backoff, so fault tests take milliseconds."""
    return cached(fake_server, tmp_path / "cache.sqlite", max_concurrency=4, timeout=0.3, max_attempts=5,
                  backoff_base=0.01, backoff_max=0.5)


def cache_lines(path) -> list[dict]:
    """The answers in the store ``path``, as ``sqlite3 <path> "SELECT key, request, value FROM calls"`` shows them."""
    import sqlite3

    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT key, request, value FROM calls ORDER BY rowid").fetchall()
    return [{"key": key, "request": json.loads(request), "response": json.loads(value)} for key, request, value in rows]


def store_bytes(path) -> bytes:
    """Every byte of the store ``path`` and its write-ahead log, as a secret scan would read them."""
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def test_generate_keeps_input_order_and_a_warm_cache_makes_no_calls(backend, fake_server, tmp_path):
    prompts = [f"question {i}" for i in range(6)]
    assert backend.generate([chat(p) for p in prompts]) == [f"answer to {p}" for p in prompts]
    assert backend.stats.calls == 6 and sum(fake_server.counts.values()) == 6
    again = cached(fake_server, tmp_path / "cache.sqlite")
    assert again.generate([chat(p) for p in prompts]) == [f"answer to {p}" for p in prompts]
    assert again.stats.calls == 0 and again.stats.cache_hits == 6
    assert sum(fake_server.counts.values()) == 6
    assert len(cache_lines(tmp_path / "cache.sqlite")) == 6


def test_identical_requests_in_one_call_are_sent_once(backend, fake_server):
    assert backend.generate([chat("same")] * 3) == ["answer to same"] * 3
    assert fake_server.counts["same"] == 1


def test_cache_key_covers_sampling_parameters_and_seed(backend, fake_server):
    for config in (GenerationConfig(), GenerationConfig(temperature=0.7, seed=1),
                   GenerationConfig(temperature=0.7, seed=2), GenerationConfig(max_new_tokens=5)):
        backend.generate([chat("q")], config)
        backend.generate([chat("q")], config)
    assert fake_server.counts["q"] == 4  # four distinct configs, each asked once
    unseeded = GenerationConfig(temperature=0.7, seed=None)
    backend.generate([chat("q")], unseeded)
    backend.generate([chat("q")], unseeded)
    assert fake_server.counts["q"] == 6  # sampling without a seed is never cached


def test_extra_body_reaches_the_server_and_is_part_of_the_cache_key(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    for penalty in (1.0, 1.0, 1.1):
        backend = open_model({"kind": "openai", "model": "fake-model", "base_url": fake_server.url,
                              "options": {"extra_body": {"repeat_penalty": penalty}}})
        backend.generate([chat("q")])
    assert [body["repeat_penalty"] for body in fake_server.bodies] == [1.0, 1.1]
    assert fake_server.bodies[0]["temperature"] == 0.0 and fake_server.bodies[0]["seed"] == 0


def test_stop_strings_cut_the_answer(backend):
    assert backend.generate([chat("alpha beta")], GenerationConfig(stop=(" beta",))) == ["answer to alpha"]


def test_429_waits_for_retry_after_then_succeeds(backend, fake_server):
    fake_server.script["busy"] = ["429", "ok"]
    fake_server.retry_after = "0.4"
    start = time.perf_counter()
    assert backend.generate([chat("busy")]) == ["answer to busy"]
    assert time.perf_counter() - start >= 0.4  # the server's Retry-After, not the 0.01 s backoff
    assert fake_server.counts["busy"] == 2 and backend.stats.retries == 1


def test_5xx_timeouts_dropped_connections_and_broken_json_are_retried(backend, fake_server):
    fake_server.script["flaky"] = ["500", "slow", "drop", "malformed", "ok"]
    fake_server.slow_seconds = 1.0  # beyond the backend's 0.3 s time-out
    assert backend.generate([chat("flaky"), chat("fine")]) == ["answer to flaky", "answer to fine"]
    assert fake_server.counts["flaky"] == 5 and fake_server.counts["fine"] == 1
    assert backend.stats.retries == 4


def test_attempts_are_capped_and_nothing_is_cached_for_a_failure(fake_server, tmp_path):
    # A time-out far above the fake server's answer time: the 0.3 s of the fixture's backend was once
    # exceeded on a busy machine, and the last error read "Request timed out" instead of the 500.
    backend = cached(fake_server, tmp_path / "cache.sqlite", max_concurrency=4, timeout=30, max_attempts=5,
                     backoff_base=0.01, backoff_max=0.5)
    fake_server.script["doomed"] = ["500"] * 10
    with pytest.raises(RequestFailed, match=r"request 0 \('doomed'\) failed after 5 attempts.*HTTP 500"):
        backend.generate([chat("doomed")])
    assert fake_server.counts["doomed"] == 5
    assert cache_lines(tmp_path / "cache.sqlite") == []


def test_other_4xx_fail_at_once_naming_the_request_and_keep_finished_answers(fake_server, tmp_path):
    backend = cached(fake_server, tmp_path / "c.sqlite", max_concurrency=1, backoff_base=0.01)
    fake_server.script["second prompt, which the server rejects"] = ["400"]
    prompts = ["first prompt", "second prompt, which the server rejects", "third prompt"]
    with pytest.raises(RequestFailed, match=r"request 1 \('second prompt, which the server rejects'\) failed: HTTP 400"):
        backend.generate([chat(p) for p in prompts])
    assert fake_server.counts["second prompt, which the server rejects"] == 1  # no retry for a 400
    assert backend.generate([chat(p) for p in prompts]) == [f"answer to {p}" for p in prompts]
    assert fake_server.counts["first prompt"] == 1  # the answer from before the failure was kept
    assert fake_server.counts["third prompt"] == 1  # asked once, whether before or after the failure
    assert sorted(line["request"]["messages"][-1]["content"] for line in cache_lines(tmp_path / "c.sqlite")) == sorted(prompts)


def test_many_small_calls_reuse_the_backends_senders_instead_of_starting_threads_per_call(fake_server, tmp_path,
                                                                                        monkeypatch):
    import threading

    backend = cached(fake_server, tmp_path / "c.sqlite", max_concurrency=4)
    started = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda thread: (started.append(thread.name), start(thread))[1])
    client_side = lambda names: [n for n in names if "process_request" not in n]  # the fake server's own threads
    for call in range(41):  # a selection-inference run asks in hundreds of small rounds like these
        assert backend.generate([chat(f"round {call} item {i}") for i in range(3)]) == \
            [f"answer to round {call} item {i}" for i in range(3)]
    # The pool may start its senders lazily (how many depends on timing), but never more than
    # max_concurrency over all 41 calls; one thread per call or per request would be 41 or 123. Besides them,
    # at most the store's lease keeper and tqdm's monitor start, once each.
    senders = [n for n in client_side(started) if n.startswith("fake-model-send")]
    others = [n for n in client_side(started) if n not in senders]
    assert 1 <= len(senders) <= 4, f"sender threads started by 41 calls: {senders}"
    assert len(others) == len(set(others)) <= 2, f"other threads started by 41 calls: {others}"
    assert sum(fake_server.counts.values()) == 41 * 3


def test_a_failing_request_lets_the_ones_in_flight_finish_into_the_cache_before_it_is_raised(fake_server, tmp_path):
    backend = cached(fake_server, tmp_path / "c.sqlite", max_concurrency=4, backoff_base=0.01)
    fake_server.slow_seconds = 0.5
    slow = [f"slow prompt {i}" for i in range(3)]
    for prompt in slow:
        fake_server.script[prompt] = ["slow"]
    fake_server.script["rejected"] = ["400"]
    with pytest.raises(RequestFailed, match="rejected"):
        backend.generate([chat(p) for p in slow + ["rejected"]])
    # The 400 came back at once; the three slow answers were in flight and are kept, not lost or late.
    assert sorted(line["request"]["messages"][-1]["content"] for line in cache_lines(tmp_path / "c.sqlite")) == slow
    assert backend.generate([chat(p) for p in slow]) == [f"answer to {p}" for p in slow]
    assert sum(fake_server.counts.values()) == 4


def test_api_key_never_reaches_cache_logs_or_errors(fake_server, tmp_path, monkeypatch, caplog):
    secret = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("FINELOGIC_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    backend = cached(fake_server, tmp_path / "c.sqlite", api_key_env="FINELOGIC_TEST_KEY", max_attempts=2,
                     backoff_base=0.01)
    fake_server.script.update({"flaky": ["500", "ok"], "unauthorised": ["401"], "bad": ["400"]})
    backend.generate([chat("flaky"), chat("fine")])
    backend.loglikelihood([("kettle orbit; kettle", " orbit;")])
    errors = []
    for prompt in ("unauthorised", "bad"):
        with pytest.raises(RequestFailed) as caught:
            backend.generate([chat(prompt)])
        errors.append(str(caught.value))
    assert fake_server.authorizations[0] == f"Bearer {secret}"  # the key was really sent ...
    assert "invalid key Bearer ***" in errors[0]  # ... and the server quoted it back
    assert secret.encode() not in store_bytes(tmp_path / "c.sqlite")
    assert secret not in caplog.text and secret not in "\n".join(errors)
    assert b"FINELOGIC_TEST_KEY" not in store_bytes(tmp_path / "c.sqlite")


def test_loglikelihood_reads_the_continuation_from_echoed_logprobs(backend, fake_server):
    results = backend.loglikelihood([("kettle orbit; kettle", " orbit;"),  # seen pair: predictable
                                     ("kettle orbit; kettle ", "lamp"),  # unseen: whitespace moves over
                                     ("kettle orbit; kettle", " orbit; lamp")])
    assert results == [(-0.05, 1, True), (-4.0, 1, False), (-4.05, 2, False)]
    assert fake_server.counts["kettle orbit; kettle lamp"] == 1
    again = cached(fake_server, backend.store.path)
    assert again.loglikelihood([("kettle orbit; kettle", " orbit;")]) == [(-0.05, 1, True)]
    assert again.stats.calls == 0  # answered from the cache: no self-check, no request


def test_a_server_with_shifted_echo_logprobs_is_refused(backend, fake_server):
    fake_server.shifted = True
    with pytest.raises(LogprobAlignmentError, match="refuses"):
        backend.loglikelihood([("kettle orbit; kettle", " orbit;")])
    assert fake_server.counts["kettle orbit; kettle orbit;"] == 0  # nothing was scored


def test_echo_without_one_logprob_per_token_fails_loudly(fake_server, tmp_path):
    fake_server.short_logprobs = True
    backend = cached(fake_server, tmp_path / "c.sqlite", check_alignment=False, max_attempts=1)
    with pytest.raises(RequestFailed, match="one log-prob per prompt token"):
        backend.loglikelihood([("kettle orbit; kettle", " orbit;")])
    assert fake_server.counts["kettle orbit; kettle orbit;"] == 1  # not retried: it would fail again
    assert cache_lines(tmp_path / "c.sqlite") == []  # and nothing wrong was cached


def test_hidden_states_are_not_offered_by_servers(backend):
    with pytest.raises(NotImplementedError, match="HFBackend"):
        backend.hidden_states("text", [2])


RUNNER = """
import sys
from finelogic.models.cache import CachedBackend
from finelogic.models.openai_backend import OpenAIBackend
backend = CachedBackend(OpenAIBackend("fake-model", base_url=sys.argv[1], max_concurrency=2, timeout=5,
                                      backoff_base=0.01), sys.argv[2], "openai:fake-model")
answers = backend.generate([[{"role": "user", "content": f"item {i}"}] for i in range(30)])
assert answers == [f"answer to item {i}" for i in range(30)]
print("done", backend.stats.calls)
"""


def _stored_quietly(path) -> list[dict]:
    """cache_lines, or none while the other process is still creating the store's tables."""
    import sqlite3

    try:
        return cache_lines(path)
    except sqlite3.OperationalError:
        return []


def test_a_run_killed_midway_resumes_without_repeating_or_duplicating(fake_server, tmp_path):
    script, cache = tmp_path / "run.py", tmp_path / "cache.sqlite"
    script.write_text(RUNNER)
    fake_server.delay = 0.05
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, str(script), fake_server.url, str(cache)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while (not cache.exists() or len(_stored_quietly(cache)) < 8) and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    finished = {line["request"]["messages"][0]["content"] for line in cache_lines(cache)}
    assert 8 <= len(finished) < 30
    rerun = subprocess.run([sys.executable, str(script), fake_server.url, str(cache)], env=env,
                           capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.split() == ["done", str(30 - len(finished))]  # only the unfinished items were sent
    keys = [line["key"] for line in cache_lines(cache)]
    assert len(keys) == len(set(keys)) == 30
    assert all(fake_server.counts[item] == 1 for item in finished)
    assert sum(fake_server.counts.values()) <= 30 + 2  # at most the 2 in flight at the kill were asked twice


def test_generation_config_is_frozen_normalises_stop_and_rejects_bad_values():
    from dataclasses import FrozenInstanceError

    from finelogic.models import split_whitespace, truncate_at_stop

    config = GenerationConfig(stop=["\n\n", "Q:"])
    assert config.stop == ("\n\n", "Q:") and GenerationConfig(stop="Q:").stop == ("Q:",)
    with pytest.raises(FrozenInstanceError):
        config.temperature = 1.0  # type: ignore[misc]
    for bad in (dict(max_new_tokens=0), dict(temperature=-0.1), dict(top_p=0.0)):
        with pytest.raises(ValueError):
            GenerationConfig(**bad)
    assert truncate_at_stop("a Q: b\n\nc", config.stop) == "a "
    assert split_whitespace("Answer: \n", "yes") == ("Answer:", " \nyes")


def test_the_same_model_name_at_another_server_is_asked_there_and_the_same_url_reads_the_cache(tmp_path, monkeypatch):
    """The cache key names the model and its server (the URL without credentials): another server's answers are
    never read as this one's."""
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    first, second = FakeOpenAI().start(), FakeOpenAI().start()
    try:
        assert first.url != second.url
        open_model(f"openai:fake-model@{first.url}").generate([chat("q")])
        other = open_model(f"openai:fake-model@{second.url}")
        assert other.generate([chat("q")]) == ["answer to q"]
        assert second.counts["q"] == 1 and other.stats.cache_hits == 0  # asked, not read from the first's answers
        with_password = first.url.replace("http://", "http://user:s3cret@") + "/"  # the same server, a key in its URL
        again = open_model(f"openai:fake-model@{with_password}")
        assert again.generate([chat("q")]) == ["answer to q"] and again.stats.cache_hits == 1
        assert first.counts["q"] == 1
        assert parse_model(f"openai:fake-model@{with_password}").model_id == f"openai:fake-model@{first.url}"
        assert {line["request"]["model"] for line in cache_lines(tmp_path / "store.sqlite")} == \
            {f"openai:fake-model@{first.url}", f"openai:fake-model@{second.url}"}
        assert b"s3cret" not in store_bytes(tmp_path / "store.sqlite")
    finally:
        first.stop()
        second.stop()


SCORER = """
import sys
from finelogic.models.spec import open_model
model = open_model("openai:fake-model@" + sys.argv[1])
model.backend.max_concurrency = 2
pairs = [(f"If:\\nx{i} = y{i}\\n\\nThen", f" x{i} = y{i}") for i in range(30)]
print(len(model.loglikelihood(pairs)), model.stats.calls)
"""


def test_log_likelihoods_killed_midway_are_kept_per_answer_and_a_rerun_sends_only_the_rest(fake_server, tmp_path):
    script, cache = tmp_path / "score.py", tmp_path / "store.sqlite"
    script.write_text(SCORER)
    fake_server.delay = 0.05
    env = {**os.environ, "PYTHONPATH": str(REPO), "FINELOGIC_CACHE": str(tmp_path)}
    process = subprocess.Popen([sys.executable, str(script), fake_server.url], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while (not cache.exists() or len(_stored_quietly(cache)) < 8) and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)  # all 30 are one chunk of the cache: only the answers in flight are lost
    process.wait()
    kept = {line["request"]["continuation"] for line in cache_lines(cache)}
    assert 8 <= len(kept) < 30
    sent = {prompt for prompt in fake_server.counts if prompt.startswith("If:")}
    assert len(sent) - len(kept) <= 2  # at most the two in flight were lost
    fake_server.counts.clear()
    rerun = subprocess.run([sys.executable, str(script), fake_server.url], env=env, capture_output=True, text=True,
                           timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    asked = [prompt for prompt in fake_server.counts if prompt.startswith("If:")]
    assert len(asked) == 30 - len(kept) and all(fake_server.counts[p] == 1 for p in asked)
    assert not any(p.endswith(x) for p in asked for x in kept)  # nothing received before was sent again
    assert len(cache_lines(cache)) == 30


TWIN = """
import sys
from finelogic.models.cache import CachedBackend
from finelogic.models.openai_backend import OpenAIBackend
backend = CachedBackend(OpenAIBackend("fake-model", base_url=sys.argv[1], max_concurrency=2, timeout=5,
                                      backoff_base=0.01), sys.argv[2], "openai:fake-model", chunk_size=4)
answers = backend.generate([[{"role": "user", "content": f"item {i}"}] for i in range(30)])
assert answers == [f"answer to item {i}" for i in range(30)]
print(backend.stats.calls)
"""


def test_two_processes_sharing_a_cache_write_no_duplicate_or_torn_line(fake_server, tmp_path):
    script, cache = tmp_path / "twin.py", tmp_path / "cache.sqlite"
    script.write_text(TWIN)
    fake_server.delay = 0.02
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    processes = [subprocess.Popen([sys.executable, str(script), fake_server.url, str(cache)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], [err for _, err in outputs]
    keys = [line["key"] for line in cache_lines(cache)]
    assert len(keys) == len(set(keys)) == 30  # every answer stored once
    # The processes take turns chunk by chunk and read each other's answers: every item was asked once.
    assert sum(fake_server.counts.values()) == 30 and sum(int(out) for out, _ in outputs) == 30
    assert all(count == 1 for count in fake_server.counts.values())


def test_replies_without_choices_or_as_a_web_page_are_retried_then_fail_naming_the_request(backend, fake_server):
    fake_server.script["odd"] = ["no_choices", "html", "ok"]
    assert backend.generate([chat("odd")]) == ["answer to odd"]
    assert fake_server.counts["odd"] == 3
    fake_server.script["hopeless"] = ["no_choices"] * 10
    with pytest.raises(RequestFailed, match=r"request 0 \('hopeless'\) failed after 5 attempts.*no choices"):
        backend.generate([chat("hopeless")])


def test_null_content_is_asked_again_then_recorded_empty_with_its_reason_and_never_cached(backend, fake_server,
                                                                                        tmp_path):
    fake_server.script.update({"flaky": ["null", "ok"], "silent": ["null", "null"], "capped": ["null_length"]})
    answers = backend.generate([chat("flaky"), chat("silent"), chat("capped")])
    assert answers == ["answer to flaky", "", ""]
    assert [a.finish_reason for a in answers] == ["stop", "stop", "length"]
    assert fake_server.counts == {"flaky": 2, "silent": 2, "capped": 1}  # a spent token cap is not retried
    stored = [line["request"]["messages"][-1]["content"] for line in cache_lines(tmp_path / "cache.sqlite")]
    assert stored == ["flaky"]  # only the request with a real answer was cached
    backend.generate([chat("silent")])
    assert fake_server.counts["silent"] == 3  # a rerun asks again


def test_a_trickling_body_cannot_hold_a_request_past_its_timeout(fake_server, tmp_path):
    backend = cached(fake_server, tmp_path / "c.sqlite", timeout=1.0, max_attempts=2, backoff_base=0.01)
    fake_server.script["slowly"] = ["trickle", "ok"]
    fake_server.trickle_seconds = 0.2  # each read arrives well within the 1 s timeout
    start = time.perf_counter()
    assert backend.generate([chat("slowly")]) == ["answer to slowly"]
    assert time.perf_counter() - start < 5  # the whole body would take ~40 s
    assert fake_server.counts["slowly"] == 2 and backend.stats.retries == 1


def test_a_served_model_whose_name_has_slashes_runs_and_writes_only_inside_its_folders(fake_server, tmp_path,
                                                                                      monkeypatch):
    """The reproduce page's vLLM spec: the model name is a hub path; no file may be named after it raw."""
    from finelogic.runs import accuracy

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("FINELOGIC_DATA_DIR", raising=False)
    for name in ("meta-llama/Llama-3.1-8B-Instruct", "../../escaped"):
        run = accuracy.run("smoke", models=[f"openai:{name}@{fake_server.url}"], settings=["Direct"])
        written = run.write()
        assert run.records["model"].unique().tolist() == [name] and len(run.records) > 0
        assert all(p.resolve().is_relative_to((tmp_path / "results" / "smoke" / "accuracy").resolve()) for p in written)
    cache_files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    # Model calls in the one store (named by nothing a model chooses), the generated test sets (named by
    # generator, never by model) under datasets/.
    assert {p.name for p in cache_files if p.parent == tmp_path / "cache"} <= {"store.sqlite", "store.sqlite-wal",
                                                                             "store.sqlite-shm"}
    models = {line["request"]["model"] for line in cache_lines(tmp_path / "cache" / "store.sqlite")}
    assert models == {f"openai:meta-llama/Llama-3.1-8B-Instruct@{fake_server.url}", f"openai:../../escaped@{fake_server.url}"}
    assert all(p.parent in (tmp_path / "cache", tmp_path / "cache" / "datasets") for p in cache_files)
    assert not any("Llama" in p.name for p in cache_files if p.parent.name == "datasets")
    assert not list(tmp_path.parent.glob("escaped*"))


def test_a_reply_for_another_model_is_recorded_and_warned_about_once(fake_server, tmp_path, caplog):
    from finelogic.models.base import GenerationConfig

    fake_server.script = {"q1": ["other_model"], "q2": ["other_model"]}
    backend = cached(fake_server, tmp_path / "cache.sqlite")
    with caplog.at_level("WARNING", logger="finelogic.models.openai_backend"):
        texts = backend.generate([[{"role": "user", "content": "q1"}], [{"role": "user", "content": "q2"}]],
                                 GenerationConfig(max_new_tokens=16))
    assert texts == ["answer to q1", "answer to q2"]
    warnings = [r.getMessage() for r in caplog.records if "another model" in r.getMessage()]
    assert len(warnings) == 1 and "'some-other-model'" in warnings[0]
    assert backend.backend.other_models == {"some-other-model"}


def test_a_reply_far_beyond_the_token_cap_is_cut_and_marked_as_cut(fake_server, tmp_path):
    from finelogic.models.base import GenerationConfig
    from finelogic.models.openai_backend import CHARS_PER_TOKEN_CAP

    fake_server.script = {"q": ["huge"]}
    backend = cached(fake_server, tmp_path / "cache.sqlite")
    completion, = backend.generate([[{"role": "user", "content": "q"}]], GenerationConfig(max_new_tokens=16))
    assert len(completion) == 16 * CHARS_PER_TOKEN_CAP and completion.finish_reason == "length"
