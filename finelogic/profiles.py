"""Run profiles: how big a run is (``smoke``: seconds, what the tests run; ``tiny``: the default, the whole
book on a 2-core CPU in minutes; ``study``: the paper's design in miniature on this CPU, hours, results
committed; ``paper``: the paper's sample sizes and models). Each notebook family keeps its typed settings
per profile beside its code (``PROFILES`` in its ``finelogic.runs`` module); this module names the
profiles and checks a name.
"""
from __future__ import annotations

from dataclasses import dataclass

PROFILE_NAMES = ("smoke", "tiny", "study", "paper")


@dataclass(frozen=True)
class Profile:
    name: str
    description: str


_PROFILES = {
    "smoke": Profile("smoke", "Seconds per notebook: a handful of items, used by the test suite."),
    "tiny": Profile("tiny", "Minutes for the whole book on a 2-core CPU with the embedded SmolLM2-135M-Instruct."),
    "study": Profile("study", "The paper's supervision experiment in miniature: the embedded model fine-tuned in "
                     "the four styles and tested like the paper's models (hours on a 2-core CPU)."),
    "paper": Profile("paper", "The paper's sample sizes and models; needs GPUs (transformers / vLLM) or API keys."),
}


def get_profile(name: str) -> Profile:
    """The profile called ``name``; a clear error listing the valid names otherwise."""
    try:
        return _PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}") from None
