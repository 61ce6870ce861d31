"""FLD accuracy by proof depth (paper Section 5.2.2, Table 5, Figure 3).

The depth page reads the FLD records of the accuracy run: :func:`run` takes them from
``results/<profile>/accuracy/`` when that run was written with the same profile, seed, settings and data,
and otherwise makes the accuracy run itself (answered from the model cache when the accuracy page ran, so
it costs no model calls). FLD items fall into the buckets of
:data:`finelogic.eval.accuracy.DEPTH_BUCKETS` (UNKNOWN items form their own bucket).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from finelogic.config import results_dir
from finelogic.data.suites import evaluation_sets
from finelogic.eval.accuracy import COMPAT_COLUMNS, DEPTH_BUCKETS, SUMMARY_COLUMNS, summarize
from finelogic.eval.forced_choice import summarize_forced
from finelogic.runs import accuracy
from finelogic.runs.base import Provenance, Run, Stopwatch

log = logging.getLogger(__name__)

#: The buckets of the paper's Table 5 (it has no UNKNOWN column).
TABLE5_BUCKETS = DEPTH_BUCKETS[:-1]

#: Columns of a depth run's ``forced`` table.
FORCED_SUMMARY_COLUMNS = ("model", "setting", "depth_bucket", "n", "correct", "accuracy", "ci_low", "ci_high",
                          "chance")


@dataclass(frozen=True)
class DepthRun(accuracy.SectionOfRun, Run):
    """Accuracy by FLD depth bucket.

    Attributes:
        summary: one row per model × setting × depth bucket (:func:`finelogic.eval.accuracy.summarize`
            of the FLD records by ``model``, ``setting``, ``depth_bucket``): ``n``, ``correct``,
            ``accuracy`` (%), ``ci_low``/``ci_high`` (%), ``no_answer``, ``no_output``, ``truncated``
            (principled policy).
        compat: the same rows under the released depth scorer (``correct_depth``: correct when the gold
            marker appears anywhere in the response; empty responses are not scored).
        forced: forced-choice accuracy (our addition, :func:`finelogic.eval.forced_choice.summarize_forced`)
            per model × setting × depth bucket, over the records with a forced answer: ``n``, ``correct``,
            ``accuracy``/``ci_low``/``ci_high`` (%, Wilson 95%), ``chance`` (33.3: FLD has three labels);
            a group without any forced answer has no row.
        sets: the accuracy run's test sets (:data:`finelogic.runs.accuracy.SET_COLUMNS`).
        accuracy_run: the accuracy run the records came from (only on a run just made).
    """

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


def run(profile: str, *, seed: int = 0, backends: Mapping[str, Any] | None = None,
        data_dir: str | Path | None = None, **overrides: Any) -> DepthRun:
    """Table 5 from the accuracy run of the same profile, seed and overrides.

    Arguments as for :func:`finelogic.runs.accuracy.run`. The written accuracy run is used when its
    settings, seed and data sources match and no backends are handed in; else the accuracy run is made.

    Provenance ``n`` counts the FLD records (model × setting × FLD item); ``model_calls`` those the
    accuracy run made now (0 when it was read).
    """
    watch = Stopwatch()
    made = _written(profile, seed, data_dir, overrides) if backends is None else None
    if made is None:
        made = accuracy.run(profile, seed=seed, backends=backends, data_dir=data_dir, **overrides)
        calls, hits = made.provenance.model_calls, made.provenance.cache_hits
    else:
        calls = hits = 0
    fld = made.records[made.records["dataset"] == "fld"]
    summary = summarize(fld, by=("model", "setting", "depth_bucket"))
    compat = summarize(fld, by=("model", "setting", "depth_bucket"), correct_column=COMPAT_COLUMNS["depth"])
    forced = summarize_forced(fld, by=("model", "setting", "depth_bucket"))
    source = made.provenance
    provenance = Provenance(family="depth", profile=profile, seed=seed, settings=source.settings,
                            models=source.models, model_ids=source.model_ids, n=len(fld), data=source.data,
                            model_calls=calls, cache_hits=hits, seconds=float(watch))
    return DepthRun(provenance, summary=summary, compat=compat, forced=forced, sets=made.sets, accuracy_run=made)


def _written(profile: str, seed: int, data_dir: str | Path | None,
             overrides: Mapping[str, Any]) -> accuracy.AccuracyRun | None:
    """The written accuracy run when it was made as this call would make it, else None."""
    directory = results_dir(profile) / "accuracy"
    try:
        written = accuracy.AccuracyRun.read(directory)
    except FileNotFoundError:
        return None
    section = accuracy.resolved_section(profile, overrides)
    wanted = Provenance("accuracy", profile, seed, settings=section).as_dict()["settings"]
    made = written.provenance
    if (made.profile, made.seed, dict(made.settings)) != (profile, seed, wanted):
        log.info("depth: the accuracy run in %s was made with other settings; running it again", directory)
        return None
    sources = {s.name: s.source for s in evaluation_sets(section, seed=seed, data_dir=data_dir)}
    if dict(written.provenance.data) != sources:
        log.info("depth: the accuracy run in %s read other data; running it again", directory)
        return None
    log.info("depth: reading the accuracy run in %s", directory)
    return written
