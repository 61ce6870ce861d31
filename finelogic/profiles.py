"""Run profiles: how big a run is. ``smoke``: seconds per notebook, a handful of items, what the test suite runs;
``tiny``: the default, the whole book in minutes on a 2-core CPU with the embedded SmolLM2-135M-Instruct;
``study``: the paper's supervision experiment in miniature, the embedded model fine-tuned in the four styles and
tested like the paper's models (hours on a 2-core CPU, results committed); ``paper``: the paper's sample sizes
and models (GPUs or API keys). Each notebook family keeps its typed config per profile beside its code
(``PROFILES`` in its ``finelogic.runs`` module); this module names the profiles and checks a name.
"""
from __future__ import annotations

PROFILE_NAMES = ("smoke", "tiny", "study", "paper")


def get_profile(name: str) -> str:
    """``name`` when it is a profile's; a ValueError listing the valid names otherwise."""
    if name not in PROFILE_NAMES:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}")
    return name
