"""Formulas in FLD's formal notation (Morishita et al.; ``book/data-formats.md``, "Formal notation").

The notation, exactly as FLD records print it::

    {A}{a}      predicate A of constant a          {A}x   predicate A of variable x
    {A}         zero-arity proposition A           #F#    falsum (a contradiction)
    ¬F          not          (F & G)  and          (F v G)  or          F -> G  implies
    (x): F      for all x    (Ex): F  there is an x

Canonical printing (what :func:`format_formula` writes and FLD uses): conjunctions and disjunctions are
always parenthesised, an implication is bare at the top level and directly under a quantifier and
parenthesised everywhere else, a quantifier's body extends to the end of the formula. Example from the
FLD v0.2 record: ``(x): ¬({B}x & {D}x) -> ¬{D}x``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union


@dataclass(frozen=True, slots=True)
class Const:
    """An individual constant, printed ``{a}``."""

    name: str


@dataclass(frozen=True, slots=True)
class Var:
    """A variable, printed bare: ``x``."""

    name: str


Term = Union[Const, Var]


@dataclass(frozen=True, slots=True)
class Atom:
    """``{A}{a}`` (predicate of a constant), ``{A}x`` (of a variable) or ``{A}`` (term None: a proposition)."""

    predicate: str
    term: Term | None = None


@dataclass(frozen=True, slots=True)
class Falsum:
    """``#F#``: the contradiction a negation elimination derives."""


@dataclass(frozen=True, slots=True)
class Not:
    body: "Formula"


@dataclass(frozen=True, slots=True)
class And:
    left: "Formula"
    right: "Formula"


@dataclass(frozen=True, slots=True)
class Or:
    left: "Formula"
    right: "Formula"


@dataclass(frozen=True, slots=True)
class Implies:
    left: "Formula"
    right: "Formula"


@dataclass(frozen=True, slots=True)
class ForAll:
    var: Var
    body: "Formula"


@dataclass(frozen=True, slots=True)
class Exists:
    var: Var
    body: "Formula"


Formula = Union[Atom, Falsum, Not, And, Or, Implies, ForAll, Exists]
FALSUM = Falsum()


def format_term(term: Term) -> str:
    if isinstance(term, Const):
        return "{" + term.name + "}"
    if isinstance(term, Var):
        return term.name
    raise TypeError(f"not a term: {term!r}")


def format_formula(formula: Formula) -> str:
    """The canonical FLD text of ``formula`` (see the module docstring); ``parse_formula`` inverts it."""
    return _format(formula, top=True)


def _format(f: Formula, top: bool) -> str:
    if isinstance(f, Atom):
        return "{" + f.predicate + "}" + ("" if f.term is None else format_term(f.term))
    if isinstance(f, Falsum):
        return "#F#"
    if isinstance(f, Not):
        return "¬" + _operand(f.body)
    if isinstance(f, And):
        return "(" + _operand(f.left) + " & " + _operand(f.right) + ")"
    if isinstance(f, Or):
        return "(" + _operand(f.left) + " v " + _operand(f.right) + ")"
    if isinstance(f, Implies):
        text = _operand(f.left) + " -> " + _operand(f.right)
        return text if top else "(" + text + ")"
    if isinstance(f, (ForAll, Exists)):
        prefix = "(" + ("E" if isinstance(f, Exists) else "") + f.var.name + "): "
        text = prefix + _format(f.body, top=True)
        return text if top else "(" + text + ")"
    raise TypeError(f"not a formula: {f!r}")


def _operand(f: Formula) -> str:
    """A sub-formula inside a connective: implications and quantifiers get parentheses."""
    return _format(f, top=False)


# --- Structural helpers shared by the prover, the rules and the generator.


def subformulas(f: Formula) -> Iterator[Formula]:
    """``f`` and every formula inside it, pre-order."""
    yield f
    if isinstance(f, Not):
        yield from subformulas(f.body)
    elif isinstance(f, (And, Or, Implies)):
        yield from subformulas(f.left)
        yield from subformulas(f.right)
    elif isinstance(f, (ForAll, Exists)):
        yield from subformulas(f.body)


def constants(f: Formula) -> frozenset[Const]:
    """Constants occurring in ``f``."""
    return frozenset(
        g.term for g in subformulas(f) if isinstance(g, Atom) and isinstance(g.term, Const)
    )


def predicates(f: Formula) -> frozenset[tuple[str, int]]:
    """``(name, arity)`` of every predicate in ``f``; arity 0 for propositions like ``{A}``."""
    return frozenset(
        (g.predicate, 0 if g.term is None else 1) for g in subformulas(f) if isinstance(g, Atom)
    )


def free_vars(f: Formula) -> frozenset[Var]:
    """Variables of ``f`` not bound by an enclosing quantifier."""
    if isinstance(f, Atom):
        return frozenset([f.term]) if isinstance(f.term, Var) else frozenset()
    if isinstance(f, Falsum):
        return frozenset()
    if isinstance(f, Not):
        return free_vars(f.body)
    if isinstance(f, (And, Or, Implies)):
        return free_vars(f.left) | free_vars(f.right)
    if isinstance(f, (ForAll, Exists)):
        return free_vars(f.body) - {f.var}
    raise TypeError(f"not a formula: {f!r}")


def substitute(f: Formula, old: Term, new: Term) -> Formula:
    """Replace the term ``old`` by ``new`` wherever it occurs free in ``f``: a variable by a constant is
    universal instantiation's ``P[x:=c]``, a constant by a variable builds ``(x): P`` from ``P[c]``."""
    if isinstance(f, Atom):
        return Atom(f.predicate, new) if f.term == old else f
    if isinstance(f, Falsum):
        return f
    if isinstance(f, Not):
        return Not(substitute(f.body, old, new))
    if isinstance(f, (And, Or, Implies)):
        return type(f)(substitute(f.left, old, new), substitute(f.right, old, new))
    if isinstance(f, (ForAll, Exists)):
        if f.var == old:  # shadowed: occurrences below are bound, not free
            return f
        return type(f)(f.var, substitute(f.body, old, new))
    raise TypeError(f"not a formula: {f!r}")


def negate(f: Formula) -> Formula:
    """The negation FLD means by ``¬hypothesis``: ``¬F``, except that ``¬G`` negates to ``G`` (a DISPROVED
    proof of ``¬({C} & {D})`` derives ``({C} & {D})``)."""
    return f.body if isinstance(f, Not) else Not(f)


def states(fact: Formula, target: Formula) -> bool:
    """Whether ``fact`` states ``target`` outright: it is ``target``, an implication whose consequent is
    ``target``, or a universal implication whose consequent, instantiated at a constant of ``target``, is it
    (what the consequent cue rule reads, :func:`finelogic.eval.cues.consequent_rule`)."""
    if fact == target:
        return True
    if isinstance(fact, Implies):
        return fact.right == target
    if isinstance(fact, ForAll) and isinstance(fact.body, Implies):
        return any(substitute(fact.body.right, fact.var, c) == target for c in constants(target))
    return False
