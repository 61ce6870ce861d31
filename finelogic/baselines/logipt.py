"""LogiPT-style training data (Feng et al., 2023; paper §5.1 and Appendix A.2), for a model that learns to
emulate a logical solver: the problem as every setting shows it, then a deterministic :func:`solver_trace` of
the gold proof, its label re-decided by z3, its step lines in FLD notation (:mod:`finelogic.eval.steps`).
"""
from __future__ import annotations

from typing import Any, MutableMapping, Sequence

from finelogic.baselines.common import (HYPOTHESIS, formula_table, gold_derivation, prover_label, rule_words,
                                        symbol_legend)
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.logic import parse_formula
from finelogic.memo import memo_key
from finelogic.prompts import MARKERS, problem_text, system_prompt

_RESULT = {
    PROVED: "the facts entail the hypothesis.",
    DISPROVED: "the facts entail the negation of the hypothesis.",
    UNKNOWN: "no derivation reaches the hypothesis or its negation; the solver finds that the facts entail neither.",
}


class LogiPTDataError(ValueError):
    """A problem cannot become a LogiPT example (no formulas, no gold proof, or a label z3 disagrees with)."""


def solver_trace(problem: Problem, *, memo: MutableMapping[str, Any] | None = None) -> str:
    """The assistant turn of a LogiPT example: the symbol legend, the facts and the query in symbols, each gold
    step with its formula and rule (``Solver: int1 = ({C}{b} & ¬{B}{a}) by modus ponens``), the result and the
    marker; ``memo`` keeps each problem's trace (or why it has none) across runs. A :class:`LogiPTDataError`
    names the problem when a formula or the gold proof is missing, or z3's verdict is not the label."""
    if memo is None:
        return _trace(problem)
    key = memo_key(["logipt trace", problem.key_fields()])
    kept = memo.get(key)
    if kept is None:
        try:
            kept = {"trace": _trace(problem)}
        except LogiPTDataError as error:
            kept = {"error": str(error)}
        memo[key] = kept
    if "error" in kept:
        raise LogiPTDataError(kept["error"])
    return kept["trace"]


def _trace(problem: Problem) -> str:
    table = formula_table(problem.formulas)
    missing = [i for i in [f.id for f in problem.facts] + [HYPOTHESIS] if i not in table]
    if missing:
        raise LogiPTDataError(f"problem {problem.id!r}: no formula for {missing}; a solver trace needs them all")
    decided = prover_label([parse_formula(table[f.id]) for f in problem.facts], parse_formula(table[HYPOTHESIS]))
    if decided != problem.label:
        raise LogiPTDataError(f"problem {problem.id!r} is labelled {problem.label} but z3 decides {decided}")
    lines = [legend] if (legend := symbol_legend(problem)) else []
    lines.append("Facts in symbols:")
    lines += [f"{f.id}: {table[f.id]}" for f in problem.facts]
    lines.append(f"Query: hypothesis = {table[HYPOTHESIS]}")
    if problem.label != UNKNOWN:
        steps = gold_derivation(problem)
        if not steps:
            raise LogiPTDataError(f"problem {problem.id!r} ({problem.label}) has no gold proof to trace")
        for k, step in enumerate(steps, 1):
            lines.append(f"Step {k}: {step.fld()}")
            formula = step.formula if step.formula is not None else "?"
            lines.append(f"Solver: {step.conclusion} = {formula} by {rule_words(step.rule)}")
    lines.append(f"Result: {_RESULT[problem.label]}")
    lines.append(MARKERS[problem.label])
    return "\n".join(lines)


def logipt_data(problems: Sequence[Problem], *, skip_unusable: bool = False,
                memo: MutableMapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """LogiPT-style chat examples, one per problem; one without a :func:`solver_trace` raises (or ``skip_unusable``)."""
    out = []
    for problem in problems:
        try:
            trace = solver_trace(problem, memo=memo)
        except LogiPTDataError:
            if skip_unusable:
                continue
            raise
        out.append({"id": problem.id, "style": "LogiPT", "messages": [
            {"role": "system", "content": system_prompt(problem.dataset)},
            {"role": "user", "content": problem_text(problem)},
            {"role": "assistant", "content": trace},
        ]})
    return out
