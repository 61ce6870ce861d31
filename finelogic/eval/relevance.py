"""Relevance of proof steps (paper §3.2: "whether its conclusion is used in later steps"), by our rule or the
released code's (:class:`RelevanceRule`).
"""
from __future__ import annotations

from typing import Sequence

from finelogic.eval.steps import Step
from finelogic.typed_config import Choice


class RelevanceRule(Choice):
    """Which steps count as relevant: ours (:func:`principled_relevance`) or the released code's
    (:func:`released_rule_relevance`)."""

    PRINCIPLED = "principled"
    RELEASED = "released"


def relevance(steps: Sequence[Step], rule: RelevanceRule | str = RelevanceRule.PRINCIPLED) -> tuple[bool | None, ...]:
    """Per step: relevant (True/False) or not counted by this rule, for any metric (None)."""
    if RelevanceRule.of(rule, "relevance rule") is RelevanceRule.PRINCIPLED:
        return principled_relevance(steps)
    return released_rule_relevance(steps)


def principled_relevance(steps: Sequence[Step]) -> tuple[bool | None, ...]:
    """The step concluding the (negated) hypothesis is relevant, and so is a step a later *relevant* step cites (a
    redefined id: the latest definition before the citing step); unparsed steps, and every step of a response that
    never reaches the hypothesis, are not; assumption openings are not counted."""
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
    """The released code's relevance of steps it read (:func:`finelogic.eval.steps.released_steps`): an ``assumpN``
    conclusion is skipped (its premises still cite), so the last step is never relevant, even in a perfect proof."""
    out: list[bool | None] = []
    for i, step in enumerate(steps):
        later = {p for s in steps[i + 1:] for p in s.premises}  # skipped assumption steps cite too
        out.append(None if step.concludes_assumption else _released_rule(step, later))
    return tuple(out)


def released_rule_relevance(steps: Sequence[Step]) -> tuple[bool | None, ...]:
    """The released code's rule (``book/released-code.md``, "Soundness details of the released code"): relevant
    when its conclusion id is a premise of *any later* step. :func:`released_relevance` on steps it read; on our
    reading, a ``-> hypothesis`` step without ``: text`` (which the released reader loses) is not counted."""
    if steps and steps[0].released:
        return released_relevance(steps)
    counted = [i for i, s in enumerate(steps)
               if not s.opens_assumption and not (s.concludes_hypothesis and s.conclusion_text is None)]
    out: list[bool | None] = [None] * len(steps)
    for position, i in enumerate(counted):
        later = {p for j in counted[position + 1:] for p in steps[j].premise_ids}
        out[i] = _released_rule(steps[i], later)
    return tuple(out)
