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
        {"datasets": {"generated_per_dataset": 8}},
    ),
    "tiny": Profile(
        "tiny",
        "Minutes for the whole book on a 2-core CPU with the embedded SmolLM2-135M-Instruct.",
        {"datasets": {"generated_per_dataset": 200}},
    ),
    "paper": Profile(
        "paper",
        "The paper's sample sizes and models; needs GPUs (transformers / vLLM) or API keys.",
        {"datasets": {"generated_per_dataset": 1100}},
    ),
}


def get_profile(name: str) -> Profile:
    """The profile called ``name``; a clear error listing the valid names otherwise."""
    try:
        return _PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}") from None
