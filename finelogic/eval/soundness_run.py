"""The stepwise-soundness notebook's run (Table 3), end to end, as a profile's ``soundness`` section says.

Inputs are the FLD responses of the accuracy run (``results_dir(profile)/accuracy/records.csv``; when that
file is absent, :func:`finelogic.eval.runs.accuracy_run` makes it unless the profile says not to, see
``run_accuracy_if_missing``). The FLD problems are regenerated with the same profile settings and
seed, so record ids pair with problems. Gold proofs are judged the same way as a sanity row: they must be
all-valid and all-atomic.

Profile section ``soundness``:

- ``judge``: ``symbolic`` (default; exact, no model) or ``hybrid`` (symbolic, the LLM judge for the rest);
- ``llm_judge``: the LLM judge's model spec (:func:`finelogic.models.spec.parse_model`), e.g.
  ``"embedded"`` or ``{"kind": "openai", "model": "gpt-4.1-mini"}``;
- ``quality``: ``{"n": ..., "depths": ...}`` FLD problems whose gold proofs make the judge-quality set;
- ``llm_quality_steps``: how many of those steps the LLM judge is scored on (None: all);
- ``run_accuracy_if_missing``: run the accuracy notebook's evaluation when ``records.csv`` is absent
  (default True; the ``smoke`` profile says False so that its page runs in seconds and then shows the
  gold-proof rows only, never made-up model rows).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from finelogic.config import results_dir
from finelogic.data.generators.fld import generate_fld
from finelogic.data.problem import DISPROVED, PROVED, Problem
from finelogic.eval.accuracy import depth_bucket
from finelogic.eval.judge_quality import LabelledStep, judge_quality, labelled_steps
from finelogic.eval.judges import HybridJudge, Judge, LLMJudge, SymbolicJudge
from finelogic.eval.soundness import judge_responses
from finelogic.profiles import get_profile

log = logging.getLogger(__name__)

GOLD_MODEL = "gold proofs (sanity check)"


@dataclass(frozen=True)
class SoundnessRun:
    """Judged steps of the model responses and of the gold proofs, and where the responses came from."""

    steps: pd.DataFrame
    gold_steps: pd.DataFrame
    problems: Mapping[str, Problem]
    source: str
    judge: str


def fld_responses(profile: str, seed: int = 0) -> tuple[pd.DataFrame, dict[str, Problem], str]:
    """The accuracy run's FLD records, the FLD problems by id, and a caption-ready source line."""
    from finelogic.data.suites import evaluation_sets

    path = results_dir(profile) / "accuracy" / "records.csv"
    if path.exists():
        records, source = pd.read_csv(path, keep_default_na=False), f"`{path.name}` of the accuracy run"
    elif get_profile(profile).section("soundness").get("run_accuracy_if_missing", True):
        from finelogic.eval.runs import accuracy_run

        records, source = accuracy_run(profile, seed).records, "the accuracy run (run now: no records.csv)"
    else:
        records, source = pd.DataFrame(columns=["id", "dataset", "response"]), "no accuracy run (no records.csv)"
    section = get_profile(profile).section("accuracy")
    fld = next(s for s in evaluation_sets(section, seed=seed) if s.name == "fld")
    problems = {p.id: p for p in fld.problems}
    records = records[(records["dataset"] == "fld") & records["id"].isin(problems)].reset_index(drop=True)
    return records, problems, source


def open_llm_judge(spec: Any) -> LLMJudge:
    """An :class:`LLMJudge` over the backend a model spec names (cached responses, greedy)."""
    from finelogic.models.spec import open_backend

    return LLMJudge(open_backend(spec))


def make_judge(section: Mapping[str, Any]) -> Judge:
    """The judge a profile's ``soundness`` section asks for (``symbolic`` or ``hybrid``)."""
    kind = section.get("judge", "symbolic")
    if kind == "symbolic":
        return SymbolicJudge()
    if kind == "hybrid":
        return HybridJudge(SymbolicJudge(), open_llm_judge(section["llm_judge"]))
    raise ValueError(f"soundness judge must be 'symbolic' or 'hybrid', got {kind!r}")


def gold_records(problems: Mapping[str, Problem]) -> pd.DataFrame:
    """One record per problem with a gold proof, the proof as its ``response``."""
    rows = [{"id": p.id, "model": GOLD_MODEL, "setting": "gold", "response": p.proof,
             "depth_bucket": depth_bucket(p.depth, p.label)}
            for p in problems.values() if p.proof is not None and p.label in (PROVED, DISPROVED)]
    return pd.DataFrame(rows, columns=["id", "model", "setting", "response", "depth_bucket"])


def soundness_run(profile: str, seed: int = 0) -> SoundnessRun:
    """Judge every FLD response of the profile's accuracy run, and the gold proofs (see module docstring)."""
    section = get_profile(profile).section("soundness")
    records, problems, source = fld_responses(profile, seed)
    judge = make_judge(section)
    steps = judge_responses(records, problems, judge)
    gold = judge_responses(gold_records(problems), problems, SymbolicJudge())
    return SoundnessRun(steps, gold, problems, source, section.get("judge", "symbolic"))


def quality_set(profile: str, seed: int = 0) -> list[LabelledStep]:
    """The labelled judge-quality steps from the gold proofs of ``quality.n`` fresh FLD problems."""
    quality = get_profile(profile).section("soundness").get("quality", {"n": 20, "depths": range(0, 8)})
    problems = generate_fld(quality["n"], seed=seed, depths=quality["depths"], labels=(PROVED, DISPROVED),
                            progress=False)
    return labelled_steps(problems, seed=seed)


def quality_table(profile: str, items: list[LabelledStep], seed: int = 0) -> pd.DataFrame:
    """Judge-quality scores of the symbolic judge on all items and of the LLM judge on a sample of them
    (the first ``llm_quality_steps`` of a seeded shuffle); the ``n`` column says how many."""
    import random

    section = get_profile(profile).section("soundness")
    tables = [judge_quality({"symbolic": SymbolicJudge()}, items)]
    limit = section.get("llm_quality_steps")
    if section.get("llm_judge") and limit != 0:
        sample = list(items)
        random.Random(seed).shuffle(sample)
        sample = sample if limit is None else sample[:limit]
        name = _spec_name(section["llm_judge"])
        tables.append(judge_quality({f"LLM ({name})": open_llm_judge(section["llm_judge"])}, sample))
    return pd.concat(tables, ignore_index=True)


def _spec_name(spec: Any) -> str:
    from finelogic.models.spec import parse_model

    return parse_model(spec).name
