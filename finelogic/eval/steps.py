"""Splitting a model's proof into steps (paper §3.2: "we extract the premises and conclusion of each step").

A response is read in one of three ways, tried in this order:

1. **``Step N:`` blocks** (also ``**Step N.**``): each block is one step; the first line of the block that
   contains ``->`` is read as an FLD step, the rest of the block is commentary. A block without ``->`` is
   one unparseable step (the model wrote prose).
2. **FLD notation** (the response contains ``->``): the text is cut at ``;`` and line breaks; every piece
   with ``->`` is a step ``fact1 & int2 -> int3: text``; pieces without it (prose, answer markers) are
   not steps.
3. **Free text**: the whole response is one unparseable step; an empty response has no steps.

An FLD step is ``premises -> conclusion[: text]``, read by :func:`finelogic.logic.proof.parse_step` (the one
reader of FLD proof notation; it says what is tolerated). Markers such as ``__PROVED__`` anywhere are
ignored.

The **reference** (the paper code's "reference dictionary") maps ids to the sentences a judge reads:
facts from the problem, ``hypothesis`` from the problem, ``intN``/``assumpN`` from their definitions in
the response. Each step carries the texts of its premises as they were defined *before* it
(``premise_texts``; None for an id not defined yet), so a judge needs only the step and the problem.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from finelogic.data.problem import Problem
from finelogic.logic.proof import HYPOTHESIS, NEGATED_HYPOTHESIS, VOID, ProofNotationError, parse_step

_MARKER = re.compile(r"__[A-Za-z]+__")
_STEP_HEADER = re.compile(r"^[ \t>*#-]*step\s*(\d+)\s*\**\s*[:.)]\**", re.I | re.M)
# ``fact1: {A}{a} -> {B}{a}``: a fact translated into a formula (symbolic styles), not a step.
_TRANSLATION = re.compile(r"^\s*(?:fact\s*\d+|hypothesis)\s*:", re.I)


@dataclass(frozen=True)
class Step:
    """One step of a model's proof.

    Attributes:
        index: 0-based position in the response.
        raw: the text the step was read from.
        premises: normalised ids as written: ``fact3``, ``int1``, ``[assump1]`` (discharged), ``void``.
        premise_texts: the sentence of each premise as defined before this step (None: not defined).
        conclusion_id: ``int2``, ``assump1``, ``hypothesis`` or ``¬hypothesis``; None when unparsed.
        conclusion_text: the text after the colon as written; None when the step wrote none.
        parsed: False when the step is not in FLD notation (free text); ``note`` says why.
    """

    index: int
    raw: str
    premises: tuple[str, ...] = ()
    premise_texts: tuple[str | None, ...] = ()
    conclusion_id: str | None = None
    conclusion_text: str | None = None
    parsed: bool = True
    note: str = ""

    @property
    def premise_ids(self) -> tuple[str, ...]:
        """Premise ids without the discharge brackets and without ``void``."""
        return tuple(p.strip("[]") for p in self.premises if p != VOID)

    @property
    def opens_assumption(self) -> bool:
        """``void -> assump1: ...``: introduces an assumption, applies no rule (skipped by the metrics)."""
        return self.parsed and self.premises == (VOID,)

    @property
    def concludes_hypothesis(self) -> bool:
        """The step derives the hypothesis (PROVED) or its negation (DISPROVED)."""
        return self.conclusion_id in (HYPOTHESIS, NEGATED_HYPOTHESIS)

    def format(self) -> str:
        """The step in canonical FLD notation (the raw text for an unparsed step)."""
        if not self.parsed:
            return self.raw
        head = f"{' & '.join(self.premises)} -> {self.conclusion_id}"
        return head + (f": {self.conclusion_text}" if self.conclusion_text is not None else "")


def _parse_fld_step(index: int, text: str) -> Step:
    """One ``premises -> conclusion: text`` step (unparsed, with a note, when it is not one)."""
    raw = text.strip()
    try:
        step = parse_step(raw)
    except ProofNotationError as error:
        return Step(index, raw, error.premises, parsed=False, note=error.note)
    return Step(index, raw, step.premises, conclusion_id=step.conclusion, conclusion_text=step.text)


def split_steps(response: str) -> list[Step]:
    """The steps of ``response`` (see the module docstring), premise texts not yet resolved."""
    text = _MARKER.sub("\n", response or "")
    headers = list(_STEP_HEADER.finditer(text))
    if headers:
        steps = []
        for k, header in enumerate(headers):
            end = headers[k + 1].start() if k + 1 < len(headers) else len(text)
            block = text[header.end():end].strip()
            line = next((ln for ln in re.split(r"[;\n]", block) if "->" in ln or "→" in ln), None)
            if line is None:
                steps.append(Step(k, block, parsed=False, note="no FLD step notation in the block"))
            else:
                steps.append(_parse_fld_step(k, line))
        return steps
    if "->" in text or "→" in text:
        pieces = [p for p in re.split(r"[;\n]", text) if ("->" in p or "→" in p) and not _TRANSLATION.match(p)]
        return [_parse_fld_step(k, p) for k, p in enumerate(pieces)]
    text = text.strip()
    return [Step(0, text, parsed=False, note="free text: no FLD step notation")] if text else []


def problem_reference(problem: Problem) -> dict[str, str]:
    """The ids a response may cite before defining anything: the facts and the (negated) hypothesis."""
    reference = {f.id: f.text for f in problem.facts}
    reference[HYPOTHESIS] = problem.hypothesis
    reference[NEGATED_HYPOTHESIS] = negated_hypothesis_text(problem)
    return reference


def parse_steps(response: str, problem: Problem) -> list[Step]:
    """Paper §3.2 step extraction: the steps of ``response`` with premise texts resolved.

    A premise resolves to the problem's fact, or to the text of the latest earlier step that concluded
    that id (a step cannot cite its own conclusion, nor one defined later: that premise text is None).
    """
    reference = problem_reference(problem)
    out = []
    for step in split_steps(response):
        if step.parsed:
            texts = tuple(reference.get(p) for p in step.premise_ids) if step.premises != (VOID,) else ()
            step = Step(step.index, step.raw, step.premises, texts, step.conclusion_id, step.conclusion_text)
            if step.conclusion_id not in (HYPOTHESIS, NEGATED_HYPOTHESIS) and step.conclusion_text:
                reference[step.conclusion_id] = step.conclusion_text
        out.append(step)
    return out


def response_reference(steps: list[Step], problem: Problem) -> dict[str, str]:
    """The whole id -> text reference of one response (facts, hypothesis, every int/assump definition)."""
    reference = problem_reference(problem)
    for step in steps:
        if step.parsed and not step.concludes_hypothesis and step.conclusion_text:
            reference[step.conclusion_id] = step.conclusion_text
    return reference


def negated_hypothesis_text(problem: Problem) -> str:
    """The sentence ``¬hypothesis`` stands for: rendered from the formula when the problem has a template
    vocabulary (FLD-style generated problems), else ``it is not the case that <hypothesis>``."""
    from finelogic.data.generators.nl import render_sentence
    from finelogic.logic import negate, parse_formula

    vocabulary = template_vocabulary(problem)
    formula = problem.formulas.get(HYPOTHESIS)
    if vocabulary is not None and formula:
        try:
            return render_sentence(negate(parse_formula(formula)), vocabulary)
        except (KeyError, ValueError):
            pass
    return "it is not the case that " + problem.hypothesis.strip().rstrip(".") + "."


def template_vocabulary(problem: Problem):
    """The problem's :class:`~finelogic.data.generators.nl.Vocabulary` when it uses the template grammar
    (FLD-style generated problems); None otherwise (real data, ProntoQA-style ``{"{A}": "wumpus"}``)."""
    from finelogic.data.generators.nl import Vocabulary

    raw = problem.meta.get("vocabulary")
    if not isinstance(raw, Mapping) or not raw or set(raw) - {"predicates", "propositions", "constants"}:
        return None
    try:
        return Vocabulary.from_dict(raw)
    except ValueError:
        return None
