"""The four supervision styles of the paper's Section 4 (Figure 4), built from gold proofs.

:func:`build` writes the assistant turn of one training example for a generated FLD-style or ProntoQA-style
problem (the connective phrasing is ours; no model writes any of it); :func:`finelogic.sft.style_checks.check`
reads it back and judges every claim in it.

- ``NL``: natural language only, one line per step: ``Step 2: From step 1 and fact4, it follows that the
  dog is red.``; the last step adds ``which is the hypothesis`` (or ``... the negation of the hypothesis``).
- ``Symb-Struct``: define every constant and predicate (``{a} = the dog``, ``{A}x = x is red``), translate
  every fact and the hypothesis into FLD notation (``fact1: {A}{a} -> {B}{a}``), then reason in FLD proof
  notation, one step per line (``fact3 & int1 -> int2: {B}{a};``).
- ``Symb-Filter``: as Struct, but only the facts the gold proof cites are defined and translated.
- ``Symb-Direct``: facts and hypothesis written directly as formulas, no definitions; the same steps.

Every style ends with ``Therefore, the hypothesis is proved.`` (disproved / cannot be decided) and the
paper's marker. The steps are the gold proof's (:func:`gold_steps`). UNKNOWN problems state no step and close
with the paper's status message (:data:`finelogic.prompts.UNKNOWN_EXPLANATION`). A problem needs formulas for
every fact and the hypothesis and a vocabulary in ``meta["vocabulary"]``, else :class:`StyleError`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol, Sequence

from finelogic.data.generators.nl import Vocabulary, parse_sentence, render_sentence
from finelogic.data.generators.prontoqa import CONCEPTS
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.eval.steps import HYPOTHESIS, NEGATED_HYPOTHESIS, NL_TAIL, problem_formulas, template_vocabulary
from finelogic.logic import (Atom, Const, ForAll, Formula, FormulaSyntaxError, Implies, Not, constants, format_formula,
                             matches_rule, subformulas, substitute)
from finelogic.logic.proof import parse_proof_steps
from finelogic.paper import STYLES
from finelogic.prompts import MARKERS, UNKNOWN_EXPLANATION

NL, STRUCT, FILTER, DIRECT = STYLES

#: The closing sentence before the marker, per label.
CLOSING = {
    PROVED: "Therefore, the hypothesis is proved.",
    DISPROVED: "Therefore, the hypothesis is disproved.",
    UNKNOWN: "Therefore, the hypothesis can be neither proved nor disproved.",
}
NO_DERIVATION = "No chain of steps from the facts reaches the hypothesis or its negation."

SYMBOL = r"\{[A-Za-z][A-Za-z0-9_]*\}"


class StyleError(ValueError):
    """A problem the styles cannot be built for, or an unknown style; the message names both."""


@dataclass(frozen=True)
class GoldStep:
    """One step of the normalised gold proof: ``premises -> conclusion`` (``intN``, ``hypothesis`` or
    ``¬hypothesis``) deriving ``formula``."""

    premises: tuple[str, ...]
    conclusion: str
    formula: Formula


# --- Words: how a problem's symbols read in English (FLD template vocabulary or ProntoQA's)


class Words(Protocol):
    def meaning(self, symbol: str, unary: bool) -> str:
        """What a symbol stands for: ``the dog`` ({a}), ``x is red`` ({A}x), ``the parade happens`` ({A})."""

    def sentence(self, formula: Formula) -> str:
        """The English sentence of ``formula``, without the final period."""

    def formula(self, sentence: str) -> Formula:
        """The inverse of :meth:`sentence`; raises ValueError outside the grammar."""


class _TemplateWords:
    """FLD-style problems: the generator's template grammar (:mod:`finelogic.data.generators.nl`)."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary

    def meaning(self, symbol: str, unary: bool) -> str:
        name = symbol.strip("{}")
        if name[0].islower():
            return self.vocabulary.constants[name]
        if unary:
            return f"x is {self.vocabulary.predicates[name]}"
        return f"{self.vocabulary.propositions[name]} happens"

    def sentence(self, formula: Formula) -> str:
        return render_sentence(formula, self.vocabulary)[:-1]

    def formula(self, sentence: str) -> Formula:
        return parse_sentence(sentence, self.vocabulary)


class _ProntoQAWords:
    """ProntoQA-style problems: ``Polly is a wumpus``, ``Polly is not sour``, ``if S then S``."""

    def __init__(self, vocabulary: Mapping[str, str]) -> None:
        self.words = {k.strip("{}"): v for k, v in vocabulary.items()}
        self.entities = {v: k for k, v in self.words.items() if k[0].islower()}
        self.properties = {v: k for k, v in self.words.items() if k[0].isupper()}

    def meaning(self, symbol: str, unary: bool) -> str:
        word = self.words[symbol.strip("{}")]
        return word if symbol[1].islower() else f"x is {_with_article(word)}"

    def sentence(self, formula: Formula) -> str:
        if isinstance(formula, Implies):
            return f"if {self.sentence(formula.left)} then {self.sentence(formula.right)}"
        negated = isinstance(formula, Not)
        atom = formula.body if negated else formula
        if not isinstance(atom, Atom) or not isinstance(atom.term, Const):
            raise ValueError(f"no ProntoQA sentence for {format_formula(formula)}")
        entity, word = self.words[atom.term.name], self.words[atom.predicate]
        return f"{entity} is {'not ' if negated else ''}{_with_article(word)}"

    def formula(self, sentence: str) -> Formula:
        m = re.fullmatch(r"if (.+?) then (.+)", sentence)
        if m:
            return Implies(self.formula(m.group(1)), self.formula(m.group(2)))
        m = re.fullmatch(r"(\w+) is (not )?(?:an? )?(\w+)", sentence)
        if m is None or m.group(1) not in self.entities or m.group(3) not in self.properties:
            raise ValueError(f"not a ProntoQA sentence: {sentence!r}")
        atom = Atom(self.properties[m.group(3)], Const(self.entities[m.group(1)]))
        return Not(atom) if m.group(2) else atom


def _with_article(word: str) -> str:
    """ProntoQA's concepts take an article (``a wumpus``, ``an impus``); properties do not (``sour``)."""
    if word not in CONCEPTS:
        return word
    return ("an " if word[0] in "aeiou" else "a ") + word


def words_for(problem: Problem, style: str) -> Words:
    vocabulary = template_vocabulary(problem)
    if vocabulary is not None:
        return _TemplateWords(vocabulary)
    raw = problem.meta.get("vocabulary")
    if isinstance(raw, Mapping) and raw and all(re.fullmatch(SYMBOL, k) for k in raw):
        return _ProntoQAWords(raw)
    raise StyleError(f"problem {problem.id!r}, style {style!r}: no vocabulary for its symbols in "
                     "meta['vocabulary'] (only generated FLD- and ProntoQA-style problems are supported)")


# --- The normalised gold proof


def style_formulas(problem: Problem, style: str) -> dict[str, Formula]:
    """Every formula of the problem, parsed, with ``¬hypothesis``; errors name the problem."""
    missing = [i for i in [*(f.id for f in problem.facts), HYPOTHESIS] if i not in problem.formulas]
    if missing:
        raise StyleError(f"problem {problem.id!r}, style {style!r}: no formula for {', '.join(missing)} "
                         "(the styles need formulas for every fact and the hypothesis)")
    try:
        return problem_formulas(problem)
    except FormulaSyntaxError as error:
        raise StyleError(f"problem {problem.id!r}, style {style!r}: {error}") from error


def gold_steps(problem: Problem, style: str = "") -> list[GoldStep]:
    """The gold proof as :class:`GoldStep` s, ``int1, int2, ...`` renumbered in order, one rule of
    :data:`finelogic.logic.RULES` per step: a universal rule applied to a fact in one go (ProntoQA's) is split, as
    FLD writes it, into universal instantiation (a new ``int``) and the step from that instance. UNKNOWN: no
    steps. StyleError when the problem lacks formulas, or a labelled problem a proof."""
    gold = style_formulas(problem, style)
    if problem.label == UNKNOWN:
        return []
    if not problem.proof:
        raise StyleError(f"problem {problem.id!r}, style {style!r}: {problem.label} without a gold proof")
    derived: dict[str, Formula] = {}  # our int ids -> formulas
    renamed: dict[str, str] = {}  # the gold proof's int ids -> ours
    out: list[GoldStep] = []

    def fresh(formula: Formula) -> str:
        name = f"int{len(derived) + 1}"
        derived[name] = formula
        return name

    for step in parse_proof_steps(problem.proof):
        premises = tuple(renamed.get(p, p) for p in step.premises)
        try:
            conclusion = gold[step.conclusion]
            premise_formulas = [derived[p] if p in derived else gold[p] for p in premises]
        except KeyError as error:
            raise StyleError(f"problem {problem.id!r}, style {style!r}: the gold proof cites {error}, "
                             "which has no formula") from error
        premises = _instantiated(premises, premise_formulas, conclusion, out, fresh)
        name = step.conclusion if step.conclusion in (HYPOTHESIS, NEGATED_HYPOTHESIS) else fresh(conclusion)
        renamed[step.conclusion] = name
        out.append(GoldStep(premises, name, conclusion))
    return out


def _instantiated(premises: tuple[str, ...], formulas: list[Formula], conclusion: Formula,
                  out: list[GoldStep], fresh) -> tuple[str, ...]:
    """``premises``, with a universal one replaced by its instance (appended to ``out``) when the step
    applies the universal rule and another rule at once."""
    universal = [i for i, f in enumerate(formulas) if isinstance(f, ForAll)]
    if len(premises) != 2 or len(universal) != 1 or matches_rule(formulas, conclusion):
        return premises
    u = universal[0]
    found = sorted(constants(formulas[1 - u]), key=lambda c: c.name)
    rule = formulas[u]
    if len(found) != 1:
        return premises
    instance = substitute(rule.body, rule.var, found[0])
    name = fresh(instance)
    out.append(GoldStep((premises[u],), name, instance))
    return tuple(name if i == u else p for i, p in enumerate(premises))


# --- Building


def build(style: str, problem: Problem) -> str:
    """The assistant turn of a training example: ``problem`` solved in supervision ``style`` (module docstring),
    lines joined by ``\\n``, ending with the label's marker; the same problem gives byte-identical text.
    StyleError for an unknown style (listing the valid ones) or an unsupported problem."""
    if style not in STYLES:
        raise StyleError(f"unknown supervision style {style!r}; choose one of {', '.join(STYLES)}")
    if problem.label is None:
        raise StyleError(f"problem {problem.id!r}, style {style!r}: a multiple-choice item has no label")
    steps = gold_steps(problem, style)
    words = words_for(problem, style)
    if style == NL:
        lines = _nl_lines(problem, steps, words)
    else:
        lines = _symbolic_lines(style, problem, steps, words)
    return "\n".join([*lines, CLOSING[problem.label], MARKERS[problem.label]])


def _nl_lines(problem: Problem, steps: Sequence[GoldStep], words: Words) -> list[str]:
    lines = ["Let us reason step by step."]
    step_of: dict[str, int] = {}
    for number, step in enumerate(steps, start=1):
        cited = [f"step {step_of[p]}" if p in step_of else p for p in step.premises]
        tail = NL_TAIL.get(step.conclusion, "")
        lines.append(f"Step {number}: From {_and_list(cited)}, it follows that {words.sentence(step.formula)}{tail}.")
        step_of[step.conclusion] = number
    if problem.label == UNKNOWN:
        lines += [NO_DERIVATION, UNKNOWN_EXPLANATION]
    return lines


def _and_list(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def used_facts(problem: Problem, steps: Sequence[GoldStep]) -> list[str]:
    """Fact ids Symb-Filter keeps, in the problem's order: those the steps cite (UNKNOWN: the facts not in
    ``meta["distractors"]``, i.e. the leaves left of the incomplete proof; all when it lists none)."""
    if problem.label == UNKNOWN:
        drop = set(problem.meta.get("distractors", ()))
        return [f.id for f in problem.facts if f.id not in drop]
    cited = {p for s in steps for p in s.premises}
    return [f.id for f in problem.facts if f.id in cited]


def _symbolic_lines(style: str, problem: Problem, steps: Sequence[GoldStep], words: Words) -> list[str]:
    formulas = style_formulas(problem, style)
    facts = used_facts(problem, steps) if style == FILTER else [f.id for f in problem.facts]
    translated = [*facts, HYPOTHESIS]
    lines: list[str] = []
    if style == FILTER:
        if problem.label == UNKNOWN:
            lines.append(f"The facts that bear on the hypothesis are {_and_list(facts)}." if facts
                         else "No fact bears on the hypothesis.")
        else:
            lines.append(f"The facts needed are {_and_list(facts)}.")
    if style in (STRUCT, FILTER):
        lines.append("Let us define the symbols.")
        lines += _definition_lines([formulas[i] for i in translated] + [s.formula for s in steps], words)
        lines.append("Now we translate the facts and the hypothesis into formulas.")
    else:
        lines.append("The facts and the hypothesis as formulas:")
    lines += [f"{i}: {problem.formulas[i]}" for i in translated]
    if problem.label == UNKNOWN:
        return lines + [NO_DERIVATION, UNKNOWN_EXPLANATION]
    lines.append("Now we reason step by step with the formulas.")
    lines += [f"{' & '.join(s.premises)} -> {s.conclusion}: {format_formula(s.formula)};" for s in steps]
    return lines


def symbols_of(formulas: Iterable[Formula]) -> tuple[list[str], list[str], list[str]]:
    """Constants, unary predicates and propositions of ``formulas`` (bare names, FLD order A..Z, AA..)."""
    atoms = {g for f in formulas for g in subformulas(f) if isinstance(g, Atom)}
    order = lambda name: (len(name), name)  # noqa: E731 - a sort key
    consts = sorted({a.term.name for a in atoms if isinstance(a.term, Const)}, key=order)
    unary = sorted({a.predicate for a in atoms if a.term is not None}, key=order)
    props = sorted({a.predicate for a in atoms if a.term is None}, key=order)
    return consts, unary, props


def _definition_lines(formulas: Iterable[Formula], words: Words) -> list[str]:
    consts, unary, props = symbols_of(formulas)
    lines = []
    for title, names, suffix, is_unary in (("Constants:", consts, "", False), ("Predicates:", unary, "x", True),
                                           ("Propositions:", props, "", False)):
        if names:
            lines.append(title)
            lines += [f"{{{n}}}{suffix} = {words.meaning('{' + n + '}', is_unary)}" for n in names]
    return lines
