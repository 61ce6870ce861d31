"""The response cache in front of an in-process backend: reruns are free, nothing is duplicated."""
from __future__ import annotations

import json

from finelogic.models.base import BackendStats, GenerationConfig
from finelogic.models.cached import CachedBackend


class CountingBackend:
    """Answers each conversation with its last message reversed; counts what it was asked."""

    def __init__(self):
        self.stats = BackendStats()
        self.asked: list[str] = []
        self.tokenizer = "the-tokenizer"

    def generate(self, conversations, config=GenerationConfig()):
        self.stats.add(calls=1)
        self.asked += [c[-1]["content"] for c in conversations]
        return [c[-1]["content"][::-1] for c in conversations]

    def loglikelihood(self, requests):
        self.stats.add(calls=1)
        return [(-float(len(x)), len(x), False) for _, x in requests]


def _conv(text):
    return [{"role": "user", "content": text}]


def test_second_run_is_answered_from_disk_without_model_calls(tmp_path):
    path = tmp_path / "cache.jsonl"
    first = CachedBackend(CountingBackend(), path, "m")
    assert first.generate([_conv("abc"), _conv("xy")]) == ["cba", "yx"]
    again = CachedBackend(CountingBackend(), path, "m")  # a new process: only the file is shared
    assert again.generate([_conv("xy"), _conv("abc")]) == ["yx", "cba"]
    assert again.backend.stats.calls == 0 and again.stats.cache_hits == 2
    assert len(path.read_text().splitlines()) == 2


def test_only_misses_reach_the_model_and_duplicates_are_computed_once(tmp_path):
    cached = CachedBackend(CountingBackend(), tmp_path / "c.jsonl", "m", chunk_size=2)
    cached.generate([_conv("a")])
    out = cached.generate([_conv("a"), _conv("b"), _conv("b"), _conv("c"), _conv("d")])
    assert out == ["a", "b", "b", "c", "d"]
    assert cached.backend.asked == ["a", "b", "c", "d"]  # 'a' once, 'b' once despite appearing twice
    assert cached.backend.stats.calls == 3  # chunks: [a], [b, c], [d]
    keys = [json.loads(line)["key"] for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 4


def test_models_and_configs_never_share_answers(tmp_path):
    path = tmp_path / "c.jsonl"
    CachedBackend(CountingBackend(), path, "model-a").generate([_conv("q")])
    other_model = CachedBackend(CountingBackend(), path, "model-b")
    other_model.generate([_conv("q")])
    other_config = CachedBackend(CountingBackend(), path, "model-a")
    other_config.generate([_conv("q")], GenerationConfig(max_new_tokens=7))
    assert other_model.backend.stats.calls == 1 and other_config.backend.stats.calls == 1


def test_unseeded_sampling_is_never_cached(tmp_path):
    cached = CachedBackend(CountingBackend(), tmp_path / "c.jsonl", "m")
    sampled = GenerationConfig(temperature=0.7, top_p=0.9, seed=None)
    cached.generate([_conv("q")], sampled)
    cached.generate([_conv("q")], sampled)
    assert cached.backend.stats.calls == 2 and not (tmp_path / "c.jsonl").exists()


def test_loglikelihood_is_cached_and_attributes_pass_through(tmp_path):
    cached = CachedBackend(CountingBackend(), tmp_path / "c.jsonl", "m")
    assert cached.loglikelihood([("ctx", " abc")]) == [(-4.0, 4, False)]
    assert cached.loglikelihood([("ctx", " abc")]) == [(-4.0, 4, False)]
    assert cached.backend.stats.calls == 1
    assert cached.tokenizer == "the-tokenizer"
