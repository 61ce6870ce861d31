"""The stepwise-soundness notebook's run (paper §3.2, Table 3), as a profile's ``soundness`` config says.

Inputs are the FLD responses and problems of the accuracy run of the same profile and seed (handed in, or
read from ``results/<profile>/accuracy``, never made quietly). Gold proofs are judged the same way as a sanity
row, the judges are scored on a labelled step set from fresh gold proofs (:mod:`finelogic.eval.judge_quality`),
and a teaching example is judged; the symbolic work is kept in memos.
"""
from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, MutableMapping

import pandas as pd

from finelogic.data.generators.fld import generate_fld
from finelogic.data.problem import DISPROVED, PROVED, Problem
from finelogic.data.suites import evaluation_sets
from finelogic.eval.accuracy import depth_bucket
from finelogic.eval.judge_quality import (LabelledStep, judge_quality, label_counts, labelled_from_json, labelled_problem,
                                          labelled_steps, labelled_to_json, teaching_example)
from finelogic.eval.judges import HybridJudge, Judge, LLMJudge, SymbolicJudge
from finelogic.eval.soundness import SoundnessPolicy, judge_responses
from finelogic.memo import Memo, memo_key, source_version
from finelogic.runs import accuracy
from finelogic.runs.backends import open_models
from finelogic.runs.base import judging_memos, resolve
from finelogic.runs.provenance import Recording
from finelogic.runs.results import PROBLEM, PROBLEMS_BY_ID, Codec, Run, kept
from finelogic.runs.upstream import find_run

log = logging.getLogger(__name__)

FAMILY = "soundness"
GOLD_MODEL = "gold proofs (sanity check)"
#: The judge-quality set as written with a run (each problem once).
LABELLED_STEPS = Codec("labelled steps", lambda items: json.dumps(labelled_to_json(items), ensure_ascii=False),
                       lambda text: tuple(labelled_from_json(json.loads(text))))


@dataclass(frozen=True)
class Quality:
    """The judge-quality set: the gold proofs of ``n`` fresh FLD problems at ``depths``."""

    n: int = 20
    depths: tuple[int, ...] = tuple(range(0, 8))


@dataclass(frozen=True)
class SoundnessConfig:
    """The soundness family's config: ``policy`` (:mod:`finelogic.eval.soundness`) for every judged table;
    ``judge`` ``symbolic`` (exact) or ``hybrid`` (the LLM judge for the rest); ``llm_quality_steps``: the
    judge-quality steps the LLM judge is scored on (None: all)."""

    policy: SoundnessPolicy = SoundnessPolicy.PRINCIPLED
    judge: str = "symbolic"
    llm_judge: Any = None
    quality: Quality = Quality()
    llm_quality_steps: int | None = None

    def __post_init__(self) -> None:
        if self.judge not in ("symbolic", "hybrid"):
            raise ValueError(f"judge: must be 'symbolic' or 'hybrid', got {self.judge!r}")


#: The family's config per profile. paper: the paper's judge, GPT-4.1-mini (Section 3.2), at temperature 0
#: (released code: src/eval_step.py), symbolic first where it decides; steps read, counted and judged as the
#: released eval_step.py does (``released``).
PROFILES = {
    "smoke": SoundnessConfig(quality=Quality(n=6, depths=(1, 2, 3))),
    "tiny": SoundnessConfig(quality=Quality(n=40, depths=tuple(range(0, 10))), llm_judge="embedded",
                              llm_quality_steps=16),
    # The study: every FLD response of the base and fine-tuned models judged by the exact symbolic judge.
    "study": SoundnessConfig(quality=Quality(n=40, depths=tuple(range(0, 10)))),
    "paper": SoundnessConfig(policy=SoundnessPolicy.RELEASED, judge="hybrid",
                               quality=Quality(n=100, depths=tuple(range(0, 20))),
                               llm_judge={"name": "GPT-4.1-mini", "kind": "openai", "model": "gpt-4.1-mini"}),
}


@dataclass(frozen=True)
class SoundnessRun(Run):
    """Judged steps of the responses (``steps``) and gold proofs (``gold_steps``), the judges' scores
    (``quality``), the judge-quality set by kind (``labels``), the teaching example's judged steps
    (``example``), and the problems, labelled steps and example problem."""

    steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    gold_steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    quality: pd.DataFrame = field(default_factory=pd.DataFrame)
    labels: pd.DataFrame = field(default_factory=pd.DataFrame)
    example: pd.DataFrame = field(default_factory=pd.DataFrame)
    problems: Mapping[str, Problem] = kept(PROBLEMS_BY_ID, default_factory=dict, repr=False)
    items: tuple[LabelledStep, ...] = kept(LABELLED_STEPS, default=(), repr=False)
    example_problem: Problem | None = kept(PROBLEM, default=None)

    @property
    def source(self) -> str:
        """Where the responses came from, caption-ready."""
        return self.provenance.data.get("responses", "")

    @property
    def judge(self) -> str:
        """``symbolic`` or ``hybrid``."""
        return self.provenance.settings.get("judge", "symbolic")

    @property
    def policy(self) -> str:
        """``principled`` or ``released``: how steps were read, counted and judged."""
        return self.provenance.settings.get("policy", "principled")


def run(profile: str, *, seed: int = 0, accuracy_run: accuracy.AccuracyRun | None = None,
        backends: Mapping[str, Any] | None = None, **overrides: Any) -> SoundnessRun:
    """Judge every FLD response of the profile's accuracy run and the gold proofs; score the judges.
    ``seed``: the accuracy run's and the judge-quality set's; ``backends``: the LLM judge's, by its entry
    (e.g. ``{"embedded": scripted}``)."""
    recording = Recording(FAMILY, profile, seed)
    config = resolve(PROFILES, profile, FAMILY, overrides)
    policy, limit = config.policy, config.llm_quality_steps
    wants_llm = config.judge == "hybrid" or (config.llm_judge and limit != 0)
    if backends and not wants_llm:
        raise ValueError(f"backends given for {', '.join(map(repr, backends))}, "
                         "but this soundness run uses no LLM judge")
    opened = open_models([config.llm_judge], backends) if wants_llm else []
    llm = LLMJudge(opened[0][1]) if opened else None

    made = accuracy_run or find_run(accuracy.AccuracyRun, accuracy.FAMILY, profile, seed)
    records, problems = fld_responses(made)
    source = "the accuracy run handed in" if accuracy_run is not None else "`records.csv` of the accuracy run"
    with judging_memos() as (verdicts, read):
        symbolic = SymbolicJudge(memo=verdicts)
        judge: Judge = HybridJudge(symbolic, llm) if config.judge == "hybrid" else symbolic
        steps = judge_responses(records, problems, judge, policy=policy, memo=read)
        gold = judge_responses(gold_records(problems), problems, symbolic, policy=policy, memo=read)

        version = source_version("finelogic.eval.judge_quality", "finelogic.data.generators.fld")
        with Memo("soundness-quality-set", version, check=labelled_problem) as kept_items:
            items = quality_set(config.quality, seed, memo=kept_items)
        quality = [judge_quality({"symbolic": symbolic}, items)]
        if llm is not None and config.llm_judge and limit != 0:  # on the first ``limit`` of a seeded shuffle
            sample = list(items)
            random.Random(seed).shuffle(sample)
            sample = sample if limit is None else sample[:limit]
            quality.append(judge_quality({f"LLM ({opened[0][0].name})": llm}, sample))
        quality = pd.concat(quality, ignore_index=True)
        quality_problems = {i.problem.id: i.problem for i in items}
        example_problem, flawed = teaching_example(list(quality_problems.values()))
        example = judge_responses(pd.DataFrame({"id": [example_problem.id], "response": [flawed]}),
                                  {example_problem.id: example_problem}, symbolic, policy=policy, memo=read)
    log.info("soundness: %d symbolic verdicts worked out, %d read from %s", symbolic.computed, verdicts.hits,
             verdicts.path)

    provenance = recording.provenance(config, opened=opened, n=len(records), data={"responses": source})
    return SoundnessRun(provenance, steps=steps, gold_steps=gold, quality=quality, labels=label_counts(items),
                        example=example, problems=problems, items=tuple(items), example_problem=example_problem)


def fld_responses(made: accuracy.AccuracyRun) -> tuple[pd.DataFrame, dict[str, Problem]]:
    """The accuracy run's FLD records and FLD problems by id (its test sets, else made again from its
    config); ValueError when a record names no FLD problem of the run."""
    fld_sets = [s for s in made.eval_sets if s.name == "fld"]
    if not fld_sets:
        fld_sets = [s for s in evaluation_sets(made.provenance.settings, seed=made.provenance.seed) if s.name == "fld"]
    problems = {p.id: p for s in fld_sets for p in s.problems}
    records = made.records[made.records["dataset"] == "fld"].reset_index(drop=True) if not made.records.empty \
        else pd.DataFrame(columns=["id", "dataset", "response"])
    unknown = sorted(set(records["id"]) - set(problems))
    if unknown:
        raise ValueError(f"{len(unknown)} FLD responses of the accuracy run name no FLD problem of its test set "
                         f"(e.g. {', '.join(unknown[:3])}): the records and the problems come from different runs")
    return records, problems


def gold_records(problems: Mapping[str, Problem]) -> pd.DataFrame:
    """One record per problem with a gold proof, the proof as its ``response``."""
    rows = [{"id": p.id, "model": GOLD_MODEL, "setting": "gold", "response": p.proof,
             "depth_bucket": depth_bucket(p.depth, p.label)}
            for p in problems.values() if p.proof is not None and p.label in (PROVED, DISPROVED)]
    return pd.DataFrame(rows, columns=["id", "model", "setting", "response", "depth_bucket"])


def quality_set(quality: Quality, seed: int, memo: MutableMapping[str, Any]) -> list[LabelledStep]:
    """The labelled judge-quality steps from the gold proofs of :class:`Quality`'s problems, kept in ``memo``."""
    key = memo_key(["quality-set", quality.n, list(quality.depths), seed])
    if memo.get(key) is not None:
        return labelled_from_json(memo[key])
    problems = generate_fld(quality.n, seed=seed, depths=quality.depths, labels=(PROVED, DISPROVED),
                            progress=False)
    items = labelled_steps(problems, seed=seed)
    memo[key] = labelled_to_json(items)
    return items
