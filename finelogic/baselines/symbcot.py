"""SymbCoT (Xu et al., 2024; paper §5.1 and Appendix A.2) in three batched rounds: Logic-LM's translation
(parsed for the trace, never refined or solved), a plan carried out step by step in symbols by the model
(:func:`plan_solve_conversation`), and a separate verification prompt (:func:`verification_conversation`).
"""
from __future__ import annotations

from typing import Any, MutableMapping, Sequence

from finelogic.baselines.common import (SYMBCOT, BaselineResult, BaselineSession, gold_derivation, rule_words,
                                        worked_examples)
from finelogic.baselines.logic_lm import gold_translation, read_translation, translation_conversation
from finelogic.data.problem import UNKNOWN, Problem
from finelogic.models.base import Backend, Conversation, GenerationConfig
from finelogic.prompts import MARKERS, UNKNOWN_EXPLANATION, problem_text, system_prompt

PLAN_SOLVE_INSTRUCTIONS = (
    "Work in symbols. First write a plan: which facts to combine, in which order, and by which inference rule, "
    "to reach the hypothesis or its negation. Then carry out the plan step by step in the formal notation, one "
    "step per line as 'premises -> conclusion: formula', and end with the marker."
)
VERIFY_INSTRUCTIONS = (
    "You are checking a solution. Check that every formula of the translation says what its sentence says and "
    "that every step follows from its premises by one inference rule. Correct what is wrong, then give the "
    "verified answer with the marker."
)


def demo_solution(example: Problem) -> str:
    """A worked plan and symbolic solution for one of our examples, ending with its marker."""
    if example.label == UNKNOWN:
        return ("Plan:\n1. Look for a chain of inferences from the facts to the hypothesis or to its negation.\n"
                f"Solution:\n{UNKNOWN_EXPLANATION}\n{MARKERS[UNKNOWN]}")
    steps = gold_derivation(example)
    goals = {"hypothesis": "the hypothesis", "¬hypothesis": "the negation of the hypothesis"}
    plan = [f"{k}. Combine {' and '.join(s.premises)} by {rule_words(s.rule)} to get "
            f"{goals.get(s.conclusion, s.conclusion)}." for k, s in enumerate(steps, 1)]
    solution = [s.fld(formal=True) for s in steps]
    return "Plan:\n" + "\n".join(plan) + "\nSolution:\n" + "\n".join(solution) + f"\n{MARKERS[example.label]}"


def plan_solve_conversation(problem: Problem, translation: str) -> Conversation:
    """The plan-and-solve prompt: :data:`PLAN_SOLVE_INSTRUCTIONS`, worked examples, the problem, its translation."""
    user = (worked_examples(problem, _plan_solve_shot, "Now this problem.")
            + f"{problem_text(problem)}\nTranslation:\n{translation.strip()}\nPlan and solution:")
    return [{"role": "system", "content": f"{system_prompt(problem.dataset)} {PLAN_SOLVE_INSTRUCTIONS}"},
            {"role": "user", "content": user}]


def verification_conversation(problem: Problem, translation: str, solution: str) -> Conversation:
    """The verification prompt: :data:`VERIFY_INSTRUCTIONS`, worked examples, the problem, translation, solution."""
    user = (worked_examples(problem, _verification_shot, "Now this problem.") + f"{problem_text(problem)}\n"
            f"Translation:\n{translation.strip()}\nSolution:\n{solution.strip()}\nVerification:")
    return [{"role": "system", "content": f"{system_prompt(problem.dataset)} {VERIFY_INSTRUCTIONS}"},
            {"role": "user", "content": user}]


def _plan_solve_shot(example: Problem) -> str:
    return (f"{problem_text(example)}\nTranslation:\n{gold_translation(example)}\n"
            f"Plan and solution:\n{demo_solution(example)}")


def _verification_shot(example: Problem) -> str:
    """A worked verification of one of our examples: translation checked, each step's rule named."""
    lines = [f"{problem_text(example)}\nTranslation:\n{gold_translation(example)}\nSolution:\n{demo_solution(example)}",
             "Verification:", "Translation check: every formula says what its sentence says."]
    steps = gold_derivation(example)
    if steps:
        lines.append("Step check:")
        lines += [f"{k}. {' & '.join(s.premises)} -> {s.conclusion}: follows by {rule_words(s.rule)}."
                  for k, s in enumerate(steps, 1)]
    else:
        lines.append("Step check: no step reaches the hypothesis or its negation.")
    lines.append(f"Verified answer: {MARKERS[example.label]}")
    return "\n".join(lines)


def symbcot(
    problems: Sequence[Problem],
    backend: Backend,
    config: GenerationConfig | None = None,
    *,
    model: str | None = None,
    memo: MutableMapping[str, Any] | None = None,
) -> BaselineResult:
    """SymbCoT over ``problems`` (module docstring); ``memo`` keeps each translation's parse across runs."""
    config = config if config is not None else GenerationConfig()
    session = BaselineSession(SYMBCOT, problems, backend, model=model)
    everyone = range(len(problems))
    translations = session.ask("translate", [(i, translation_conversation(problems[i])) for i in everyone], config)
    for item, text in zip(session.items, translations):
        read = read_translation(text, item.problem, solver=False, memo=memo)
        item.data.update(formulas=dict(read["formulas"]), translation_errors=list(read["errors"]))
    solutions = session.ask("plan-solve", [(i, plan_solve_conversation(problems[i], translations[i]))
                                           for i in everyone], config)
    verdicts = session.ask("verify", [(i, verification_conversation(problems[i], translations[i], solutions[i]))
                                      for i in everyone], config)
    answers = [f"{solution.strip()}\n\nVerification:\n{verdict.strip()}"
               for solution, verdict in zip(solutions, verdicts)]
    return session.finish(answers)
