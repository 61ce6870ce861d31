"""The datasets notebook's run (paper Section 3, Table 1): the four test sets loaded as every page loads
them (config: the keys of :func:`finelogic.data.suites.evaluation_sets`), counted; no model.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from finelogic.data.generate import generate
from finelogic.data.problem import PROVED, Problem
from finelogic.data.stats import dataset_summary
from finelogic.data.suites import EvalSet, FLDSet, ProntoQASet, TestSets, evaluation_sets
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Recording
from finelogic.runs.results import EVAL_SETS, PROBLEM, Run, kept

FAMILY = "datasets"
#: The test sets each profile counts for Table 1.
PROFILES = {"smoke": TestSets(fld=FLDSet("fld", n=6), prontoqa_generated=ProntoQASet(n=6), limit=20),
            "tiny": TestSets(fld=FLDSet("fld_paper_test", scale=0.1), prontoqa_generated=ProntoQASet(n=100)),
            # The study's test sets (the accuracy family's study sets).
            "study": TestSets(fld=FLDSet("fld", n=240, depths=tuple(range(0, 8))),
                      prontoqa_generated=ProntoQASet(n=150, hops=(5,)),
                      limit={"multi_logieval": 150, "prontoqa": 150}),
            "paper": TestSets(fld=FLDSet("fld_paper_test", scale=1.0), prontoqa_generated=ProntoQASet(n=500))}
SET_COLUMNS = ("dataset", "paper_name", "samples", "source", "generated", "present")


@dataclass(frozen=True)
class DatasetsRun(Run):
    """What was loaded: ``sets`` (:data:`SET_COLUMNS`, Table 1's order), ``summary`` (per present set by paper
    name: label types and counts, depths), ``depths`` (``dataset``, ``depth``, ``items``); ``eval_sets`` and
    ``example`` (a generated depth-3 FLD problem with its gold proof) are written too."""

    sets: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(SET_COLUMNS)))
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    depths: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["dataset", "depth", "items"]))
    eval_sets: tuple[EvalSet, ...] = kept(EVAL_SETS, default=(), repr=False)
    example: Problem | None = kept(PROBLEM, default=None)


def run(profile: str, *, seed: int = 0, data_dir: str | Path | None = None,
        backends: Mapping[str, Any] | None = None, **overrides: Any) -> DatasetsRun:
    """Load the profile's four test sets and count them; ``backends`` must be empty (no model is used)."""
    if backends:
        raise ValueError("the datasets run uses no model; do not hand it backends")
    recording = Recording(FAMILY, profile, seed)
    config = resolve(PROFILES, profile, FAMILY, overrides)
    sets = tuple(evaluation_sets(config, seed=seed, data_dir=data_dir))
    table = pd.DataFrame([(s.name, s.paper_name, len(s.problems), s.source, s.generated, s.present) for s in sets],
                         columns=list(SET_COLUMNS))
    summary = dataset_summary({s.paper_name: list(s.problems) for s in sets if s.present})
    depths = pd.DataFrame([(s.paper_name, depth, count) for s in sets
                           for depth, count in sorted(Counter(p.depth for p in s.problems if p.depth is not None).items())],
                          columns=["dataset", "depth", "items"])
    example = next(p for p in generate("fld", n=6, seed=seed, depths=[3], labels=[PROVED]) if p.proof)
    provenance = recording.provenance(config, n=sum(len(s.problems) for s in sets),
                                      data={s.name: s.source for s in sets})
    return DatasetsRun(provenance, sets=table, summary=summary, depths=depths, eval_sets=sets, example=example)
