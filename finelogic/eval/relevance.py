"""Relevance of proof steps (paper §3.2: "whether its conclusion is used in later steps").

Both rules give one value per step: True, False or None (not counted by this rule, for any metric).

``principled`` (the default): the step concluding the hypothesis (or ``¬hypothesis``) is relevant, and
relevance propagates backwards: a step is relevant when a later *relevant* step cites its conclusion (a
redefined id is the latest definition before the citing step). Assumption openings are not counted; an
unparsed step, or any step of a response that never reaches the hypothesis, is not relevant.

``paper_code_compat``: the rule of the released code (``book/released-code.md``, "Soundness details of the
released code"): relevant when its conclusion id is a premise of *any later* step. On steps read the
released way it is :func:`released_relevance`, exactly: an ``assumpN`` conclusion is skipped (its premises
still count as citations); no conclusion id, or a ``⊥`` conclusion text, counts as relevant; so the last
step is never relevant, even in a perfect proof. On steps of our reading it is
:func:`paper_code_compat_relevance` (the ``relevant_compat`` column), where a ``-> hypothesis`` step
written without ``: text``, which the released reader loses, is not counted.
"""
from __future__ import annotations

from typing import Sequence

from finelogic.eval.steps import Step
from finelogic.settings import Choice


class RelevanceRule(Choice):
    """Which steps count as relevant: ours (backward from the step that concludes the hypothesis), or the
    released code's (module docstring)."""

    PRINCIPLED = "principled"
    PAPER_CODE_COMPAT = "paper_code_compat"


def relevance(steps: Sequence[Step], rule: RelevanceRule | str = RelevanceRule.PRINCIPLED) -> tuple[bool | None, ...]:
    """Per step: relevant (True/False) or not counted (None), under ``rule`` (module docstring)."""
    if RelevanceRule.of(rule, "relevance rule") is RelevanceRule.PRINCIPLED:
        return principled_relevance(steps)
    return paper_code_compat_relevance(steps)


def principled_relevance(steps: Sequence[Step]) -> tuple[bool | None, ...]:
    """Backwards from the (negated) hypothesis; assumption openings None."""
    out: list[bool | None] = [None] * len(steps)
    needed: set[str] = set()
    for i in range(len(steps) - 1, -1, -1):
        step = steps[i]
        if step.opens_assumption:
            needed.discard(step.conclusion_id)  # the opening satisfies later citations, uncounted
            continue
        relevant = step.parsed and (step.concludes_hypothesis or step.conclusion_id in needed)
        out[i] = bool(relevant)
        if relevant:
            needed.discard(step.conclusion_id)  # an earlier step with the same id is shadowed
            needed.update(step.premise_ids)
    return tuple(out)


def _released_rule(step: Step, later: set[str]) -> bool:
    """Relevant under the released rule: no conclusion, a ``⊥`` conclusion, or cited by a later step."""
    if step.conclusion_id is None or (step.conclusion_text or "").strip() == "⊥":
        return True
    return step.conclusion_id in later


def released_relevance(steps: Sequence[Step]) -> tuple[bool | None, ...]:
    """The released code's relevance of steps it read (:func:`finelogic.eval.steps.released_steps`)."""
    out: list[bool | None] = []
    for i, step in enumerate(steps):
        later = {p for s in steps[i + 1:] for p in s.premises}  # skipped assumption steps cite too
        out.append(None if step.concludes_assumption else _released_rule(step, later))
    return tuple(out)


def _dropped_by_released_code(step: Step) -> bool:
    return step.concludes_hypothesis and step.conclusion_text is None


def paper_code_compat_relevance(steps: Sequence[Step]) -> tuple[bool | None, ...]:
    """The released code's rule (module docstring): :func:`released_relevance` on steps it read, else the
    rule alone on our reading of the steps."""
    if steps and steps[0].released:
        return released_relevance(steps)
    counted = [i for i, s in enumerate(steps) if not s.opens_assumption and not _dropped_by_released_code(s)]
    out: list[bool | None] = [None] * len(steps)
    for position, i in enumerate(counted):
        step = steps[i]
        later: set[str] = set()
        for j in counted[position + 1:]:
            later.update(steps[j].premise_ids)
        out[i] = _released_rule(step, later)
    return tuple(out)
