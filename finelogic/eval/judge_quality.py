"""How good is a judge? A labelled step set built from gold proofs (:func:`labelled_steps`), and each judge's
scores on it (:func:`judge_quality`). The paper checked GPT-4.1-mini on 200 hand-annotated steps (98%, §3.2).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import pandas as pd

from finelogic.logic.proof import ProofStep, parse_proof_steps
from finelogic.data.generators.nl import render_sentence
from finelogic.data.problem import Problem
from finelogic.eval.judges import Judge
from finelogic.eval.steps import (HYPOTHESIS, NEGATED_HYPOTHESIS, Step, parse_steps, problem_formulas, step_from_json,
                                  step_json_problem, step_to_json, template_vocabulary)
from finelogic.logic import entails, is_atomic_step, negate

KINDS = ("gold", "merged", "swapped_premise", "negated_conclusion")


@dataclass(frozen=True)
class LabelledStep:
    """One step with its true labels. ``response`` is the proof text the step ends (for display)."""

    problem: Problem
    step: Step
    kind: str
    valid: bool
    atomic: bool
    response: str


def labelled_to_json(items: Sequence[LabelledStep]) -> dict:
    """``items`` as JSON (each problem once); :func:`labelled_from_json` reads them back."""
    problems: dict[int, Problem] = {}  # by object, in the order first seen
    for item in items:
        problems.setdefault(id(item.problem), item.problem)
    position = {key: k for k, key in enumerate(problems)}
    return {"problems": [problem.to_dict() for problem in problems.values()],
            "items": [[position[id(i.problem)], step_to_json(i.step), i.kind, i.valid, i.atomic, i.response]
                      for i in items]}


def labelled_from_json(value: dict) -> list[LabelledStep]:
    problems = [Problem.from_dict(d) for d in value["problems"]]
    return [LabelledStep(problems[k], step_from_json(step), kind, valid, atomic, response)
            for k, step, kind, valid, atomic, response in value["items"]]


def labelled_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as :func:`labelled_to_json` wrote it (None: nothing), each item checked by
    type and each problem read back: the check of a memo that keeps the set."""
    if type(value) is not dict or type(value.get("problems")) is not list or type(value.get("items")) is not list:
        return "a labelled step set must be {'problems': [...], 'items': [...]}"
    for n, item in enumerate(value["items"]):
        if type(item) is not list or len(item) != 6:
            return f"item {n} must be [problem, step, kind, valid, atomic, response]"
        k, step, kind, valid, atomic, response = item
        if type(k) is not int or not 0 <= k < len(value["problems"]):
            return f"item {n} names problem {k!r}, of {len(value['problems'])} kept (the set was cut short?)"
        why = step_json_problem(step) or (None if kind in KINDS else f"kind {kind!r} is not one of {KINDS}")
        if why is None and (type(valid) is not bool or type(atomic) is not bool or type(response) is not str):
            why = "'valid' and 'atomic' must be true or false, 'response' a string"
        if why is not None:
            return f"item {n}: {why}"
    try:
        [Problem.from_dict(d) for d in value["problems"]]
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        return f"a problem cannot be read back ({type(error).__name__}: {str(error)[:80]})"
    return None


def _labelled(problem: Problem, before: Sequence[ProofStep], step: ProofStep, conclusion, kind: str,
              formulas: dict) -> LabelledStep:
    """``step`` after the gold steps ``before``, read as a judge reads it, labelled on the formulas."""
    response = "; ".join(s.format() for s in [*before, step]) + ";"
    parsed = parse_steps(response, problem)[-1]
    given = [formulas[p] for p in step.premises]
    valid = entails(given, conclusion)
    return LabelledStep(problem, parsed, kind, valid, valid and is_atomic_step(given, conclusion), response)


def _merged(first: ProofStep, second: ProofStep) -> ProofStep:
    """Two consecutive steps written as one (``second`` cites ``first``'s conclusion)."""
    premises = tuple(dict.fromkeys([*first.premises, *(p for p in second.premises if p != first.conclusion)]))
    return ProofStep(premises, second.conclusion, second.text)


def _negated_step(step: ProofStep, formulas: dict, vocabulary) -> tuple[ProofStep, object]:
    if step.conclusion in (HYPOTHESIS, NEGATED_HYPOTHESIS):
        flipped = NEGATED_HYPOTHESIS if step.conclusion == HYPOTHESIS else HYPOTHESIS
        return ProofStep(step.premises, flipped), formulas[flipped]
    negated = negate(formulas[step.conclusion])
    return ProofStep(step.premises, step.conclusion, render_sentence(negated, vocabulary)), negated


def problem_labelled_steps(problem: Problem, rng: random.Random) -> list[LabelledStep]:
    """Every gold step (valid, atomic), every mergeable consecutive pair (valid, not atomic), one premise swapped for
    a distractor per step with a fact premise (usually invalid), one negated conclusion per step (invalid); every
    label verified on the formulas, while the judge reads only the sentences."""
    vocabulary = template_vocabulary(problem)
    if problem.proof is None or vocabulary is None:
        return []
    formulas = problem_formulas(problem)
    gold = parse_proof_steps(problem.proof)
    distractors = list(problem.meta.get("distractors", ()))
    out = []
    for i, step in enumerate(gold):
        before = gold[:i]
        out.append(_labelled(problem, before, step, formulas[step.conclusion], "gold", formulas))
        if i > 0 and gold[i - 1].conclusion in step.premises:
            merged = _merged(gold[i - 1], step)
            out.append(_labelled(problem, gold[:i - 1], merged, formulas[step.conclusion], "merged", formulas))
        facts = [k for k, p in enumerate(step.premises) if p.startswith("fact")]
        if facts and distractors:
            k = rng.choice(facts)
            swapped = list(step.premises)
            swapped[k] = rng.choice(distractors)
            altered = ProofStep(tuple(swapped), step.conclusion, step.text)
            out.append(_labelled(problem, before, altered, formulas[step.conclusion], "swapped_premise", formulas))
        negated, conclusion = _negated_step(step, formulas, vocabulary)
        out.append(_labelled(problem, before, negated, conclusion, "negated_conclusion", formulas))
    return out


def labelled_steps(problems: Iterable[Problem], seed: int = 0) -> list[LabelledStep]:
    """The judge-quality set from the gold proofs of ``problems`` (:func:`problem_labelled_steps`)."""
    rng = random.Random(seed)
    return [item for p in problems for item in problem_labelled_steps(p, rng)]


def _scores(truth: Sequence[bool], predicted: Sequence[bool | None]) -> dict[str, float | int]:
    """Accuracy (undecided = wrong), precision and recall of the True class, detection of the False class."""
    tp = sum(t and p is True for t, p in zip(truth, predicted))
    fp = sum(not t and p is True for t, p in zip(truth, predicted))
    tn = sum(not t and p is False for t, p in zip(truth, predicted))
    positives, negatives = sum(truth), len(truth) - sum(truth)
    nan = float("nan")
    return {
        "n": len(truth),
        "undecided": sum(p is None for p in predicted),
        "accuracy": (tp + tn) / len(truth) if truth else nan,
        "precision": tp / (tp + fp) if tp + fp else nan,
        "recall": tp / positives if positives else nan,
        "detection": tn / negatives if negatives else nan,
    }


def judge_quality(judges: dict[str, Judge], items: Sequence[LabelledStep]) -> pd.DataFrame:
    """One row per judge × criterion (``valid``, ``atomic``): n, undecided, accuracy (undecided = wrong),
    precision and recall of the True class, detection (share of invalid / non-atomic steps flagged)."""
    tables = [score_verdicts(name, items, judge.judge_all([(i.step, i.problem) for i in items]))
              for name, judge in judges.items()]
    return pd.concat(tables, ignore_index=True)


def score_verdicts(name: str, items: Sequence[LabelledStep], verdicts: Sequence) -> pd.DataFrame:
    """:func:`judge_quality`'s rows for verdicts already computed (one per item, in order)."""
    rows = []
    for criterion in ("valid", "atomic"):
        truth = [getattr(item, criterion) for item in items]
        predicted = [getattr(v, criterion) for v in verdicts]
        rows.append({"judge": name, "criterion": criterion, **_scores(truth, predicted)})
    return pd.DataFrame(rows)


def label_counts(items: Sequence[LabelledStep]) -> pd.DataFrame:
    """How many steps of each kind, and how many of them are valid / atomic (verified labels)."""
    frame = pd.DataFrame([{"kind": i.kind, "valid": i.valid, "atomic": i.atomic} for i in items])
    if frame.empty:
        return pd.DataFrame(columns=["kind", "n", "valid", "atomic"])
    table = frame.groupby("kind", sort=False).agg(n=("valid", "size"), valid=("valid", "sum"),
                                                  atomic=("atomic", "sum"))
    return table.reindex([k for k in KINDS if k in table.index]).reset_index()


def flawed_proof(problem: Problem) -> str:
    """A teaching response: the gold proof with one step merged into the next (valid, not atomic), a restated
    distractor fact (irrelevant) and one premise swapped for a distractor (invalid); raises ValueError without
    a 3+ step proof, a mergeable pair and a distractor."""
    gold = parse_proof_steps(problem.proof or "")
    distractors = list(problem.meta.get("distractors", ()))
    merge_at = next((i for i in range(1, len(gold)) if gold[i - 1].conclusion in gold[i].premises), None)
    if len(gold) < 3 or not distractors or merge_at is None:
        raise ValueError(f"{problem.id}: needs a gold proof of 3+ steps with a mergeable pair and a distractor")
    steps = list(gold)
    steps[merge_at - 1:merge_at + 1] = [_merged(steps[merge_at - 1], steps[merge_at])]
    swap_at = next((i for i, s in enumerate(steps) if i != merge_at - 1
                    and any(p.startswith("fact") for p in s.premises)), None)
    if swap_at is not None:
        s = steps[swap_at]
        k = next(k for k, p in enumerate(s.premises) if p.startswith("fact"))
        steps[swap_at] = ProofStep(s.premises[:k] + (distractors[0],) + s.premises[k + 1:], s.conclusion, s.text)
    redundant = ProofStep((distractors[-1],), f"int{len(gold) + 1}", problem.fact(distractors[-1]).text)
    steps.insert(1, redundant)
    return "; ".join(s.format() for s in steps) + "; __" + (problem.label or "UNKNOWN") + "__"


def teaching_example(problems: Sequence[Problem]) -> tuple[Problem, str]:
    """The problem with the longest gold proof that :func:`flawed_proof` can alter, and that response."""
    for problem in sorted(problems, key=lambda p: -len(parse_proof_steps(p.proof or ""))):
        try:
            return problem, flawed_proof(problem)
        except ValueError:
            continue
    raise ValueError("no problem with a gold proof of 3+ steps, a mergeable pair and a distractor")
