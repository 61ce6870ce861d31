"""FLD accuracy by proof depth (paper Section 5.2.2, Table 5, Figure 3), from the FLD records of the
accuracy run (handed in, found in ``results/<profile>/accuracy/`` by its key, or made now when the caller
hands in the models), in the buckets of :data:`finelogic.eval.accuracy.DEPTH_BUCKETS`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from finelogic.data.suites import evaluation_sets
from finelogic.eval.accuracy import RELEASED_COLUMNS, DEPTH_BUCKETS, SUMMARY_COLUMNS, summarize
from finelogic.eval.forced_choice import summarize_forced
from finelogic.runs import accuracy
from finelogic.runs.provenance import Recording
from finelogic.runs.results import Run
from finelogic.runs.upstream import find_run

log = logging.getLogger(__name__)

FAMILY = "depth"
#: Depth reads the accuracy run: its settings are the accuracy family's.
PROFILES = accuracy.PROFILES

#: The buckets of the paper's Table 5 (it has no UNKNOWN column).
TABLE5_BUCKETS = DEPTH_BUCKETS[:-1]

#: Columns of a depth run's ``forced`` table.
FORCED_SUMMARY_COLUMNS = ("model", "setting", "depth_bucket", "n", "correct", "accuracy", "ci_low", "ci_high",
                          "chance")


@dataclass(frozen=True)
class DepthRun(accuracy.ConfigOfRun, Run):
    """Accuracy by FLD depth bucket, one row per model × setting × bucket: ``summary`` (principled policy),
    ``compat`` (the released depth scorer, ``correct_depth``: the gold marker anywhere) and ``forced`` (our
    forced choice, with ``chance``); ``sets`` and the live-only ``accuracy_run`` are the accuracy run's."""

    summary: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["model", "setting", "depth_bucket", *SUMMARY_COLUMNS]))
    compat: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["model", "setting", "depth_bucket", *SUMMARY_COLUMNS]))
    forced: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(FORCED_SUMMARY_COLUMNS)))
    sets: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(accuracy.SET_COLUMNS)))
    accuracy_run: accuracy.AccuracyRun | None = field(default=None, repr=False, compare=False)

    def curves(self) -> pd.DataFrame:
        """Accuracy (%) with one row per (model, setting) and one column per Table 5 bucket, in order."""
        rows = self.summary[self.summary["depth_bucket"].isin(TABLE5_BUCKETS)]
        return rows.pivot_table(index=["model", "setting"], columns="depth_bucket", values="accuracy",
                                sort=False).reindex(columns=list(TABLE5_BUCKETS))


def run(profile: str, *, seed: int = 0, accuracy_run: accuracy.AccuracyRun | None = None,
        backends: Mapping[str, Any] | None = None, data_dir: str | Path | None = None,
        **overrides: Any) -> DepthRun:
    """Table 5 from the accuracy run of the same profile, seed and overrides: ``accuracy_run``, else the
    written one with that key, else (with ``backends``) one made now; arguments as for
    :func:`finelogic.runs.accuracy.run` (UpstreamMissing when there is none). Provenance ``n`` counts the FLD
    records; ``model_calls`` those made now."""
    recording = Recording(FAMILY, profile, seed)
    calls = hits = 0
    made = accuracy_run
    if made is None and backends:
        made = accuracy.run(profile, seed=seed, backends=backends, data_dir=data_dir, **overrides)
        calls, hits = made.provenance.model_calls, made.provenance.cache_hits
    elif made is None:
        config = accuracy.resolved_config(profile, overrides)
        sources = {s.name: s.source for s in evaluation_sets(config, seed=seed, data_dir=data_dir)}
        made = find_run(accuracy.AccuracyRun, accuracy.FAMILY, profile, seed, config, data=sources)
    fld = made.records[made.records["dataset"] == "fld"]
    summary = summarize(fld, by=("model", "setting", "depth_bucket"))
    compat = summarize(fld, by=("model", "setting", "depth_bucket"), correct_column=RELEASED_COLUMNS["depth"])
    forced = summarize_forced(fld, by=("model", "setting", "depth_bucket"))
    source = made.provenance
    provenance = recording.provenance(source.settings, models=source.models, model_ids=source.model_ids, n=len(fld),
                                      data=source.data, model_calls=calls, cache_hits=hits)
    return DepthRun(provenance, summary=summary, compat=compat, forced=forced, sets=made.sets, accuracy_run=made)
