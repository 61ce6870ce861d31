"""Run profiles: how big a run is. A profile is data, not branches scattered through notebooks.

- ``smoke``: seconds; what the tests run.
- ``tiny``: the default; the whole book on a 2-core CPU in minutes with the embedded SmolLM2.
- ``study``: the paper's design in miniature on this CPU: the embedded model fine-tuned in the four
  styles, its fine-tuned models evaluated by the accuracy, depth, soundness and probing families beside the
  base model (hours; its results are committed, so the book shows them by default).
- ``paper``: the paper's sample sizes and models (needs GPUs or API keys).

Each notebook family keeps its settings per profile beside its code, as typed values
(``PROFILES`` in its ``finelogic.runs`` module: a frozen dataclass per profile, whose defaults are the
dataclass's own); this module names the profiles and checks a name.
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
