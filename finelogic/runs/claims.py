"""The claims family (``notebooks/08_claims.ipynb``): :func:`run` reads the upstream runs (supervision, accuracy,
soundness and probing: the fine-tuned models' rows are the evaluation families') and hands their tables to
:func:`finelogic.eval.claims.verdicts`, which states and decides each claim's rule."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from finelogic.eval.claims import VERDICT_COLUMNS, VERDICTS, fine_tuned_setting, verdicts
from finelogic.profiles import PROFILE_NAMES
from finelogic.runs import accuracy, probing, soundness, supervision
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Recording
from finelogic.runs.results import Run
from finelogic.runs.upstream import find_run

FAMILY = "claims"
#: The families whose runs it reads (handed in as ``supervision_run``, ``accuracy_run``, ...).
UPSTREAM = (supervision.FAMILY, accuracy.FAMILY, soundness.FAMILY, probing.FAMILY)


@dataclass(frozen=True)
class ClaimsConfig:
    """``readout``: the probing read-out whose probes the Table 4 claims read (``chat`` / ``plain``; empty:
    the probing run's first)."""

    readout: str = ""

    def __post_init__(self) -> None:
        if self.readout not in ("", "chat", "plain"):
            raise ValueError(f"readout: unknown read-out {self.readout!r}; choose chat, plain or leave it empty")


#: The same rules in every profile: the profile only changes the upstream runs' sizes.
PROFILES = {name: ClaimsConfig() for name in PROFILE_NAMES}


@dataclass(frozen=True)
class ClaimsRun(Run):
    """The verdicts on the paper's findings, one row per claim, and the upstream runs read (live only)."""

    verdicts: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(VERDICT_COLUMNS)))
    supervision_run: supervision.SupervisionRun | None = field(default=None, repr=False, compare=False)
    accuracy_run: accuracy.AccuracyRun | None = field(default=None, repr=False, compare=False)
    probing_run: probing.ProbingRun | None = field(default=None, repr=False, compare=False)

    def counts(self) -> dict[str, int]:
        """Claims per verdict, in :data:`~finelogic.eval.claims.VERDICTS` order."""
        column = self.verdicts["verdict"]
        return {v: int((column == v).sum()) for v in VERDICTS}


def run(profile: str, *, seed: int = 0, supervision_run: supervision.SupervisionRun | None = None,
        probing_run: probing.ProbingRun | None = None, accuracy_run: accuracy.AccuracyRun | None = None,
        soundness_run: soundness.SoundnessRun | None = None, backends: Mapping[str, Any] | None = None,
        **overrides: Any) -> ClaimsRun:
    """The verdicts for ``profile`` and ``seed`` from the upstream runs (module docstring), each handed in
    or the written one made with any config (else UpstreamMissing); ``backends`` must be empty."""
    if backends:
        raise ValueError(f"the claims family runs no model; backends given for {', '.join(map(repr, backends))}")
    recording = Recording(FAMILY, profile, seed)
    config = resolve(PROFILES, profile, FAMILY, overrides)
    made_sft = supervision_run or find_run(supervision.SupervisionRun, supervision.FAMILY, profile, seed)
    made_accuracy = accuracy_run or find_run(accuracy.AccuracyRun, accuracy.FAMILY, profile, seed)
    made_soundness = soundness_run or find_run(soundness.SoundnessRun, soundness.FAMILY, profile, seed)
    made_probing = probing_run or find_run(probing.ProbingRun, probing.FAMILY, profile, seed)
    training_depths = tuple(made_sft.provenance.settings.get("fld_depths", ()))
    readout = config.readout or next(iter(made_probing.provenance.settings.get("readouts", ())), None)
    sources: list[tuple[str, Any]] = [(supervision.FAMILY, made_sft), (accuracy.FAMILY, made_accuracy),
                                      (soundness.FAMILY, made_soundness), (probing.FAMILY, made_probing)]
    records, steps, sets = made_accuracy.records, made_soundness.steps, made_accuracy.eval_sets
    # The first evaluated model that is not a fine-tuned one (a study without its base unit has none: the
    # supervision run's base, whose rows are then absent and its comparisons inconclusive).
    base = next((m for m in made_accuracy.provenance.models if fine_tuned_setting(m) is None),
                made_sft.provenance.models[0] if made_sft.provenance.models else None)
    # The styles the supervision run is meant to hold: a study unit not yet made leaves its style absent.
    expected = [f"SFT-{style}" for style in made_sft.provenance.settings.get("styles") or ()]
    table = verdicts(records, steps, made_probing.summary, training_depths, base=base, readout=readout,
                     expected=expected, problems=[p for s in sets for p in s.problems] or None)
    data = {name: f"the {name} run of commit {made.provenance.commit} ({made.provenance.n} items)"
            for name, made in sources}
    models = tuple(dict.fromkeys((*made_sft.provenance.models, *made_probing.provenance.models)))
    provenance = recording.provenance(config, models=models, n=len(table), data=data)
    return ClaimsRun(provenance, verdicts=table, supervision_run=made_sft, accuracy_run=made_accuracy,
                     probing_run=made_probing)
