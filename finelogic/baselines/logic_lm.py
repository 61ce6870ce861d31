"""Logic-LM (Pan et al., 2023; paper §5.1 and Appendix A.2): the model translates the problem into our FLD
notation (:func:`translation_conversation`), our z3 prover decides (:func:`solve`), the label is the answer.
A translation that fails goes back with its error (:data:`REFINE_PROMPT`) up to ``refinements`` times, then
the item falls back to direct prompting; on two-label datasets a solver UNKNOWN counts as no answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, MutableMapping, Sequence

import z3

from finelogic.baselines.common import (LOGIC_LM, BaselineResult, BaselineSession, prover_label,
                                        symbol_legend, worked_examples)
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.logic import Formula, FormulaSyntaxError, ProverError, consistent, format_formula, parse_formula
from finelogic.memo import memo_key
from finelogic.models.base import Backend, Conversation, GenerationConfig
from finelogic.prompts import DIRECT, MARKERS, build_conversation, problem_text

#: The translator's instructions: our notation, then the answer format.
TRANSLATION_SYSTEM = (
    "Translate a logic problem into formulas. Notation: {A}{a} says that predicate A holds of constant a; "
    "{A}x is predicate A of the variable x; {A} alone is a proposition; ¬ is not, & is and, v is or, -> is "
    "implies; (x): means for every x and (Ex): means there is an x. Predicates are capital letters in braces, "
    "constants small letters in braces; put parentheses around a conjunction or disjunction. First list the "
    "symbols you use, then write one line 'factN: <formula>' for each fact and a last line "
    "'hypothesis: <formula>'."
)
#: What a refinement round adds after the failed translation.
REFINE_PROMPT = ("This translation has an error:\n{error}\n"
                 "Write the whole translation again, with the error corrected, in the same format.")

_LINE = re.compile(r"^[\s>*#-]*`?\s*(fact\s*\d+|hypothesis)\s*`?\s*[:=]\s*(.*?)\s*$", re.I)
#: The start of :func:`solve`'s error when z3 gave up (a time-out depends on the machine's load: never memoised).
UNDECIDED = "the solver could not decide"
_SOLVER_WORDS = {
    PROVED: "the translated facts entail the hypothesis",
    DISPROVED: "the translated facts entail the negation of the hypothesis",
    UNKNOWN: "the translated facts entail neither the hypothesis nor its negation",
}


# --- Prompts


def gold_translation(problem: Problem) -> str:
    """A problem's correct translation in the answer format, from the generator's ``formulas``."""
    missing = [i for i in [f.id for f in problem.facts] + ["hypothesis"] if i not in problem.formulas]
    if missing:
        raise ValueError(f"problem {problem.id!r} has no formulas for {missing}: it cannot be a translation example")
    legend = symbol_legend(problem)
    lines = [legend] if legend else []
    lines += [f"{f.id}: {problem.formulas[f.id]}" for f in problem.facts]
    lines.append(f"hypothesis: {problem.formulas['hypothesis']}")
    return "\n".join(lines)


def translation_conversation(problem: Problem) -> Conversation:
    """The translation prompt: :data:`TRANSLATION_SYSTEM`, worked translations of our examples, then the problem."""
    examples = worked_examples(problem, _translation_shot, "Now translate this problem.")
    user = f"{examples}{problem_text(problem)}\nTranslation:"
    return [{"role": "system", "content": TRANSLATION_SYSTEM}, {"role": "user", "content": user}]


def _translation_shot(example: Problem) -> str:
    return f"{problem_text(example)}\nTranslation:\n{gold_translation(example)}"


# --- Reading a translation and solving it


@dataclass(frozen=True)
class Translation:
    """What a translation reply says: ``facts`` (id -> parsed formula, in the order written), ``hypothesis``
    (None when missing or unparseable) and ``errors`` (one message per problem found; empty: usable)."""

    facts: dict[str, Formula] = field(default_factory=dict)
    hypothesis: Formula | None = None
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def parse_translation(text: str, problem: Problem) -> Translation:
    """Read the ``factN: <formula>`` / ``hypothesis: <formula>`` lines of a reply (other lines ignored), with
    a message for each error the model can correct; untranslated facts are allowed."""
    ids = [f.id for f in problem.facts]
    id_range = f"{ids[0]} to {ids[-1]}" if len(ids) > 1 else (ids[0] if ids else "none")
    facts: dict[str, Formula] = {}
    hypothesis = None
    seen: set[str] = set()
    errors: list[str] = []
    for line in (text or "").splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        key = re.sub(r"\s+", "", m.group(1).lower())
        body = m.group(2).strip().strip("`").strip().rstrip(".;").strip()
        if key in seen:
            errors.append(f"{key} is translated twice; write each fact once")
            continue
        seen.add(key)
        if key != "hypothesis" and key not in ids:
            errors.append(f"{key} is not a fact of this problem (its facts are {id_range})")
            continue
        try:
            formula = parse_formula(body)
        except FormulaSyntaxError as error:
            errors.append(f"{key}: {error.message} at position {error.position} in {body!r}")
            continue
        if key == "hypothesis":
            hypothesis = formula
        else:
            facts[key] = formula
    if not seen - {"hypothesis"}:
        errors.append("no fact is translated: write one line 'factN: <formula>' per fact")
    if "hypothesis" not in seen:
        errors.append("the hypothesis is not translated: end with a line 'hypothesis: <formula>'")
    return Translation(facts, hypothesis, tuple(errors))


def solve(translation: Translation) -> tuple[str | None, str | None]:
    """(label, error) from our z3 prover on the translated facts; with label None the error says why."""
    if not translation.ok or translation.hypothesis is None:
        return None, "\n".join(translation.errors) or "the hypothesis is not translated"
    facts = list(translation.facts.values())
    try:
        if not consistent(facts):
            return None, ("the translated facts contradict each other (no situation makes them all true), "
                          "so at least one formula does not say what its sentence says")
        return prover_label(facts, translation.hypothesis), None
    except (ProverError, z3.Z3Exception) as error:
        return None, f"{UNDECIDED}: {error}"


def translation_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a kept :func:`read_translation` result (None: nothing): the check of the
    memo that keeps them."""
    if type(value) is not dict or not {"formulas", "errors"} <= value.keys() <= {"formulas", "errors", "label", "error"}:
        return f"a translation must be {{'formulas', 'errors'[, 'label', 'error']}}, not {str(value)[:60]}"
    formulas, errors = value["formulas"], value["errors"]
    if type(formulas) is not dict or any(type(f) is not str for f in formulas.values()):
        return "'formulas' must map ids to formula strings"
    if type(errors) is not list or any(type(e) is not str for e in errors):
        return "'errors' must be a list of strings"
    if value.get("label") not in (PROVED, DISPROVED, UNKNOWN, None) or type(value.get("error", "")) not in (str, type(None)):
        return f"'label' must be {PROVED}, {DISPROVED}, {UNKNOWN} or null and 'error' a string or null"
    return None


def read_translation(reply: str, problem: Problem, *, solver: bool = True,
                     memo: MutableMapping[str, Any] | None = None) -> dict[str, Any]:
    """A translation reply as JSON-able values: ``formulas`` and ``errors`` and, with ``solver``,
    :func:`solve`'s ``label`` and ``error``; ``memo`` keeps them across runs (never a z3 time-out)."""
    key = memo_key(["logic-lm translation", solver, reply, [f.id for f in problem.facts]]) if memo is not None else ""
    kept = memo.get(key) if memo is not None else None
    if kept is not None:
        return kept
    translation = parse_translation(reply, problem)
    formulas = {k: format_formula(v) for k, v in translation.facts.items()}
    if translation.hypothesis is not None:
        formulas["hypothesis"] = format_formula(translation.hypothesis)
    result: dict[str, Any] = {"formulas": formulas, "errors": list(translation.errors)}
    if solver:
        label, error = solve(translation)
        result.update(label=label, error=error)
    if memo is not None and not (result.get("error") or "").startswith(UNDECIDED):
        memo[key] = result
    return result


# --- The baseline


def logic_lm(
    problems: Sequence[Problem],
    backend: Backend,
    config: GenerationConfig | None = None,
    *,
    model: str | None = None,
    refinements: int = 2,
    memo: MutableMapping[str, Any] | None = None,
) -> BaselineResult:
    """Logic-LM over ``problems`` (module docstring; common arguments: :mod:`finelogic.baselines.common`).

    ``config`` serves every round (a long problem's translation needs about 25 tokens per fact). A solved
    item's ``response`` is the canonical translation, the solver's verdict and its marker, a fallback item's
    the direct answer; ``memo`` keeps each reply's parse and solver result across runs.
    """
    if refinements < 0:
        raise ValueError(f"refinements must be >= 0, got {refinements}")
    config = config if config is not None else GenerationConfig()
    session = BaselineSession(LOGIC_LM, problems, backend, model=model)
    bases = [translation_conversation(p) for p in problems]
    for item in session.items:
        item.data.update(translations=[], errors=[], formulas=None, solver=None, refinements=0, fallback=False)

    requests = list(enumerate(bases))
    for round_ in range(refinements + 1):
        stage = "translate" if round_ == 0 else f"refine-{round_}"
        replies = session.ask(stage, requests, config)
        failed = []
        for (i, _), reply in zip(requests, replies):
            data = session.items[i].data
            data["translations"].append(reply)
            data["refinements"] = round_
            read = read_translation(reply, problems[i], memo=memo)
            label, error = read["label"], read["error"]
            if error is None:
                data.update(formulas=dict(read["formulas"]), solver=label)
            else:
                data["errors"].append(error)
                failed.append((i, reply, error))
        pending = [i for i, _, _ in failed]
        if round_ < refinements:  # the translation prompt, the failed translation, its error
            requests = [(i, [*bases[i], {"role": "assistant", "content": reply},
                             {"role": "user", "content": REFINE_PROMPT.format(error=error)}])
                        for i, reply, error in failed]

    direct = session.ask("fallback-direct", [(i, build_conversation(problems[i], DIRECT)) for i in pending], config)
    fallbacks = dict(zip(pending, direct))
    answers = []
    for i, item in enumerate(session.items):
        if i in fallbacks:
            item.data["fallback"] = True
            answers.append(fallbacks[i])
        else:
            label = item.data["solver"]
            rendered = "\n".join(f"{k}: {v}" for k, v in item.data["formulas"].items())
            answers.append(f"Translation:\n{rendered}\nSolver: {_SOLVER_WORDS[label]}.\n{MARKERS[label]}")
    return session.finish(answers)
