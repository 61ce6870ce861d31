"""FLD's deduction rules as data (``book/data-formats.md``, "Deduction rules"), pattern matching, and the
atomicity test of a proof step (paper §3.2: a step "applies a single, minimal inference rule").

Matching is syntactic: premises in any order, quantified variables named alike on both sides, no matching
modulo commutativity. Left out: universal generalisation and any rule whose side condition ranges over the
whole derivation, which a single step cannot show; opening an assumption (``void -> assump1``) is no rule step.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from typing import Mapping, Sequence, Union

from finelogic.logic.formula import (FALSUM, And, Atom, Const, Exists, Falsum, ForAll, Formula, Implies, Not, Or, Term,
                                     Var, constants, free_vars, substitute)


@dataclass(frozen=True, slots=True)
class MetaFormula:
    """Matches any formula; the same name must match the same formula throughout one rule."""

    name: str


@dataclass(frozen=True, slots=True)
class MetaTerm:
    """Matches a term: ``kind`` "const" (only constants), "var" (only variables) or "any"."""

    name: str
    kind: str = "any"


@dataclass(frozen=True, slots=True)
class Substituted:
    """``body[var:=term]``: the instance of a quantified body (all three are metavariables)."""

    body: MetaFormula
    var: MetaTerm
    term: MetaTerm


@dataclass(frozen=True, slots=True)
class Discharged:
    """A premise that is a discharged assumption, FLD's ``[assump1]`` (implication and negation introduction)."""

    formula: Formula


Premise = Union[Formula, Discharged]
Bindings = Mapping[str, Union[Formula, Term]]


@dataclass(frozen=True)
class Rule:
    """One deduction rule ``premises ⊢ conclusion`` over metavariables; ``not_free_in`` lists (term, formula)
    metavariable pairs where the term must not occur free in the formula (existential elimination's
    eigenvariable condition)."""

    name: str
    premises: tuple
    conclusion: object
    not_free_in: tuple[tuple[str, str], ...] = ()


_A, _B, _C, _P = MetaFormula("A"), MetaFormula("B"), MetaFormula("C"), MetaFormula("P")
_X, _T = MetaTerm("x", "var"), MetaTerm("c", "const")

RULES: tuple[Rule, ...] = (
    Rule("reiteration", (_A,), _A),  # FLD depth-0 proofs: ``fact3 -> hypothesis``
    Rule("modus_ponens", (_A, Implies(_A, _B)), _B),  # implication elimination
    Rule("and_intro", (_A, _B), And(_A, _B)),
    Rule("and_elim_left", (And(_A, _B),), _A),
    Rule("and_elim_right", (And(_A, _B),), _B),
    Rule("or_intro_left", (_A,), Or(_A, _B)),
    Rule("or_intro_right", (_B,), Or(_A, _B)),
    Rule("or_elim", (Or(_A, _B), Implies(_A, _C), Implies(_B, _C)), _C),
    Rule("implication_intro", (Discharged(_A), _B), Implies(_A, _B)),
    Rule("negation_intro", (Discharged(_A), FALSUM), Not(_A)),
    Rule("negation_elim", (_A, Not(_A)), FALSUM),  # A, ¬A ⊢ #F#
    Rule("universal_instantiation", (ForAll(_X, _P),), Substituted(_P, _X, _T)),
    Rule("existential_intro", (Substituted(_P, _X, _T),), Exists(_X, _P)),
    Rule("existential_elim", (Exists(_X, _P), ForAll(_X, Implies(_P, _C))), _C, not_free_in=(("x", "C"),)),
)
RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)


def _bind(bindings: dict, name: str, value: object) -> dict | None:
    if name in bindings:
        return bindings if bindings[name] == value else None
    return {**bindings, name: value}


def _match_term(pattern: object, term: Term, bindings: dict) -> dict | None:
    if isinstance(pattern, MetaTerm):
        kind = {"const": Const, "var": Var}.get(pattern.kind, (Const, Var))
        return _bind(bindings, pattern.name, term) if isinstance(term, kind) else None
    return bindings if pattern == term else None


def match(pattern: object, formula: Premise, bindings: Bindings | None = None) -> dict | None:
    """Unify ``pattern`` with ``formula``: the extended bindings, or None when they do not match.
    ``Substituted(P, x, c)`` needs ``P`` and ``x`` bound already (:func:`instantiate_rule` orders the patterns so);
    ``c`` is then found among the formula's constants."""
    b = dict(bindings or {})
    if isinstance(pattern, MetaFormula):
        return None if isinstance(formula, Discharged) else _bind(b, pattern.name, formula)
    if isinstance(pattern, Discharged):
        return match(pattern.formula, formula.formula, b) if isinstance(formula, Discharged) else None
    if isinstance(formula, Discharged):
        return None
    if isinstance(pattern, Substituted):
        return _match_substituted(pattern, formula, b)
    if type(pattern) is not type(formula):
        return None
    if isinstance(pattern, Atom):
        if pattern.predicate != formula.predicate:
            return None
        if pattern.term is None or formula.term is None:
            return b if pattern.term is None and formula.term is None else None
        return _match_term(pattern.term, formula.term, b)
    if isinstance(pattern, Falsum):
        return b
    if isinstance(pattern, Not):
        return match(pattern.body, formula.body, b)
    if isinstance(pattern, (And, Or, Implies)):
        b = match(pattern.left, formula.left, b)
        return None if b is None else match(pattern.right, formula.right, b)
    if isinstance(pattern, (ForAll, Exists)):
        b = _match_term(pattern.var, formula.var, b)
        return None if b is None else match(pattern.body, formula.body, b)
    raise TypeError(f"not a pattern: {pattern!r}")


def _match_substituted(pattern: Substituted, formula: Formula, b: dict) -> dict | None:
    if pattern.body.name not in b or pattern.var.name not in b:
        raise ValueError(f"{pattern!r}: bind {pattern.body.name} and {pattern.var.name} before matching")
    body, var = b[pattern.body.name], b[pattern.var.name]
    if var not in free_vars(body):  # vacuous quantifier: the instance is the body itself
        return b if body == formula else None
    bound = b.get(pattern.term.name)
    candidates = [bound] if bound is not None else sorted(constants(formula), key=lambda c: c.name)
    for c in candidates:
        if isinstance(c, Const) and substitute(body, var, c) == formula:
            return _bind(b, pattern.term.name, c)
    return None


def instantiate_rule(rule: Rule, premises: Sequence[Premise], conclusion: Formula) -> dict | None:
    """Bindings that make ``premises ⊢ conclusion`` an instance of ``rule`` (premise order free), or None."""
    if len(premises) != len(rule.premises):
        return None
    for order in permutations(premises):
        pairs = [(rule.conclusion, conclusion), *zip(rule.premises, order)]
        pairs.sort(key=lambda pair: isinstance(pair[0], Substituted))  # bind P and x before P[x:=c]
        b: dict | None = {}
        for pattern, formula in pairs:
            b = match(pattern, formula, b)
            if b is None:
                break
        if b is not None and all(b[t] not in free_vars(b[f]) for t, f in rule.not_free_in):
            return b
    return None


def matches_rule(premises: Sequence[Premise], conclusion: Formula) -> tuple[str, ...]:
    """Names of the rules in :data:`RULES` of which ``premises ⊢ conclusion`` is an instance, in RULES order:
    usually none or one; ``({A} & {A}) ⊢ {A}`` is both ``and_elim_left`` and ``and_elim_right``."""
    return tuple(r.name for r in RULES if instantiate_rule(r, premises, conclusion) is not None)


def is_atomic_step(premises: Sequence[Premise], conclusion: Formula) -> bool:
    """Paper §3.2 atomicity, made exact: the step is one application of one rule of :data:`RULES` (a
    degenerate step fitting two readings still counts); False for a step that merges rules, e.g. ``{A}, {A} ->
    {B}, {B} -> {C} ⊢ {C}``. Validity is :func:`finelogic.logic.prover.entails`'s question."""
    return bool(matches_rule(premises, conclusion))


def premise_formulas(premises: Sequence[Premise]) -> tuple[Formula, ...]:
    """The premises a z3 validity check uses: discharged assumptions dropped."""
    return tuple(p for p in premises if not isinstance(p, Discharged))
