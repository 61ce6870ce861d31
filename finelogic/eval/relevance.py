"""Relevance of proof steps (paper §3.2: "whether its conclusion is used in later steps").

Two policies, both returning one value per step: True (relevant), False (not relevant) or None (the step
is not counted by this policy, for any metric).

``principled`` (the default): the step that concludes the hypothesis (or ``¬hypothesis``) is relevant by
definition, and relevance propagates backwards: a step is relevant when a later *relevant* step cites its
conclusion (a redefined id is the latest definition before the citing step). Steps opening an assumption
(``void -> assump1``) are not counted. A response that never reaches the hypothesis has no relevant step.
An unparsed step has no conclusion anyone could cite: not relevant.

``paper_code_compat``: the rule of the authors' released code (``book/released-code.md``, "Soundness details
of the released code"), read as a fact about its behaviour: a step is relevant when its conclusion id is a
premise of *any later* step. On steps read the released way (:func:`finelogic.eval.steps.released_steps`,
what the policy judges) it is :func:`released_relevance`, exactly:

* a step concluding ``assumpN`` is skipped (None), yet its premises still count as later citations;
* a step without a conclusion id (prose, an empty response) counts as relevant;
* a step whose conclusion text is ``⊥`` counts as relevant;
* otherwise the conclusion id must be among the premise ids of some later step, so the last step is
  never relevant (nothing follows it), even in a perfect proof.

On steps of OUR reading (:func:`finelogic.eval.steps.parse_steps`) the same rule gives
:func:`paper_code_compat_relevance`: the released rule alone, without the released reading, shown beside
the principled numbers (the ``relevant_compat`` column of principled step rows). There the released
reader's loss of a ``-> hypothesis`` (or ``¬hypothesis``) step written without ``: text`` is imitated by
not counting it (None), so the ints only it used look irrelevant. The book says which policy each table
uses.
"""
from __future__ import annotations

from typing import Sequence

from finelogic.eval.steps import Step
from finelogic.settings import Policy


def relevance(steps: Sequence[Step], policy: Policy | str = Policy.PRINCIPLED) -> tuple[bool | None, ...]:
    """Per step: relevant (True/False) or not counted (None), under ``policy`` (module docstring)."""
    if Policy.of(policy, "relevance policy") is Policy.PRINCIPLED:
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
