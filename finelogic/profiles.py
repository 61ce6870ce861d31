"""Run profiles: how big a run is. A profile is data, not branches scattered through notebooks.

- ``smoke``: seconds; what the tests run.
- ``tiny``: the default; the whole book on a 2-core CPU in minutes with the embedded SmolLM2.
- ``paper``: the paper's sample sizes and models (needs GPUs or API keys).

Each notebook family reads its own section (``profile.section("accuracy")``); later issues add fields.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

PROFILE_NAMES = ("smoke", "tiny", "paper")


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def section(self, family: str) -> Mapping[str, Any]:
        """Settings of one notebook family; an empty mapping when the profile does not set any."""
        return MappingProxyType(dict(self.sections.get(family, {})))


_PROFILES = {
    "smoke": Profile(
        "smoke",
        "Seconds per notebook: a handful of items, used by the test suite.",
        {"datasets": {"fld": {"name": "fld", "n": 6}, "prontoqa_generated": {"n": 6, "hops": (5,)},
                      "limit": 20},
         "accuracy": {"fld": {"name": "fld", "n": 6, "depths": (0, 5, 17)},
                      "prontoqa_generated": {"n": 2, "hops": (5,)}, "limit": 2,
                      "models": ("embedded",), "settings": ("Direct", "CoT"),
                      "generation": {"max_new_tokens": 16}, "batch_size": 8}},
    ),
    "tiny": Profile(
        "tiny",
        "Minutes for the whole book on a 2-core CPU with the embedded SmolLM2-135M-Instruct.",
        {"datasets": {"fld": {"name": "fld_paper_test", "scale": 0.1},
                      "prontoqa_generated": {"n": 100, "hops": (5,)}, "limit": None},
         "accuracy": {"fld": {"name": "fld_paper_test", "scale": 0.04},
                      "prontoqa_generated": {"n": 30, "hops": (5,)}, "limit": 30,
                      "models": ("embedded",), "settings": ("Direct", "CoT"),
                      "generation": {"max_new_tokens": 96}, "batch_size": 32}},
    ),
    "paper": Profile(
        "paper",
        "The paper's sample sizes and models; needs GPUs (transformers / vLLM) or API keys.",
        {"datasets": {"fld": {"name": "fld_paper_test", "scale": 1.0},
                      "prontoqa_generated": {"n": 500, "hops": (5,)}, "limit": None},
         # The paper's models and sampling (temperature 0.7, top-p 0.9, 3,072 new tokens). The HF models
         # want a GPU (or point them at a vLLM server with "openai:<model>@http://host:8000/v1").
         "accuracy": {"fld": {"name": "fld_paper_test", "scale": 1.0},
                      "prontoqa_generated": {"n": 500, "hops": (5,)}, "limit": None,
                      "models": ({"name": "Llama-3.1-8B-Instruct", "kind": "hf",
                                  "path": "meta-llama/Llama-3.1-8B-Instruct", "device_map": "auto"},
                                 {"name": "Qwen-2.5-7B-Instruct", "kind": "hf",
                                  "path": "Qwen/Qwen2.5-7B-Instruct", "device_map": "auto"},
                                 {"name": "GPT-4o", "kind": "openai", "model": "gpt-4o"},
                                 {"name": "DeepSeek-R1", "kind": "openai", "model": "deepseek-reasoner",
                                  "base_url": "https://api.deepseek.com", "api_key_env": "DEEPSEEK_API_KEY"}),
                      "settings": ("Direct", "CoT", "Few-shot"),
                      "generation": {"max_new_tokens": 3072, "temperature": 0.7, "top_p": 0.9},
                      "batch_size": 16}},
    ),
}


def get_profile(name: str) -> Profile:
    """The profile called ``name``; a clear error listing the valid names otherwise."""
    try:
        return _PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}") from None
