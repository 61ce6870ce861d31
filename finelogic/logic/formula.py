"""Formulas in FLD's formal notation (``book/data-formats.md``, "Formal notation"), printed and walked.

``{A}{a}`` predicate of a constant, ``{A}x`` of a variable, ``{A}`` a proposition, ``#F#`` falsum, ``¬F``,
``(F & G)``, ``(F v G)``, ``F -> G``, ``(x): F`` for all, ``(Ex): F`` there is.
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
class _Binary:
    """A connective of two formulas: :class:`And` ``(F & G)``, :class:`Or` ``(F v G)``, :class:`Implies` ``F -> G``."""

    left: "Formula"
    right: "Formula"


class And(_Binary):
    __slots__ = ()


class Or(_Binary):
    __slots__ = ()


class Implies(_Binary):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class _Quantified:
    """:class:`ForAll` ``(x): body`` or :class:`Exists` ``(Ex): body``; the body extends to the formula's end."""

    var: Var
    body: "Formula"


class ForAll(_Quantified):
    __slots__ = ()


class Exists(_Quantified):
    __slots__ = ()


Formula = Union[Atom, Falsum, Not, And, Or, Implies, ForAll, Exists]
FALSUM = Falsum()


def format_formula(formula: Formula) -> str:
    """The canonical FLD text of ``formula``, which ``parse_formula`` inverts: conjunctions and disjunctions
    always parenthesised, an implication or quantifier bare at the top level and directly under a quantifier,
    parenthesised elsewhere (FLD's ``(x): ¬({B}x & {D}x) -> ¬{D}x``)."""
    return _format(formula, top=True)


def _format(f: Formula, top: bool = False) -> str:
    if isinstance(f, Atom):
        term = "" if f.term is None else "{" + f.term.name + "}" if isinstance(f.term, Const) else f.term.name
        return "{" + f.predicate + "}" + term
    if isinstance(f, Falsum):
        return "#F#"
    if isinstance(f, Not):
        return "¬" + _format(f.body)
    if isinstance(f, And):
        return "(" + _format(f.left) + " & " + _format(f.right) + ")"
    if isinstance(f, Or):
        return "(" + _format(f.left) + " v " + _format(f.right) + ")"
    if isinstance(f, Implies):
        text = _format(f.left) + " -> " + _format(f.right)
        return text if top else "(" + text + ")"
    if isinstance(f, _Quantified):
        prefix = "(" + ("E" if isinstance(f, Exists) else "") + f.var.name + "): "
        text = prefix + _format(f.body, top=True)
        return text if top else "(" + text + ")"
    raise TypeError(f"not a formula: {f!r}")


def subformulas(f: Formula) -> Iterator[Formula]:
    """``f`` and every formula inside it, pre-order."""
    yield f
    if isinstance(f, _Binary):
        yield from subformulas(f.left)
        yield from subformulas(f.right)
    elif isinstance(f, (Not, _Quantified)):
        yield from subformulas(f.body)


def constants(f: Formula) -> frozenset[Const]:
    return frozenset(g.term for g in subformulas(f) if isinstance(g, Atom) and isinstance(g.term, Const))


def predicates(f: Formula) -> frozenset[tuple[str, int]]:
    """``(name, arity)`` of every predicate in ``f``; arity 0 for propositions like ``{A}``."""
    return frozenset((g.predicate, 0 if g.term is None else 1) for g in subformulas(f) if isinstance(g, Atom))


def free_vars(f: Formula) -> frozenset[Var]:
    """Variables of ``f`` not bound by an enclosing quantifier."""
    if isinstance(f, Atom):
        return frozenset([f.term]) if isinstance(f.term, Var) else frozenset()
    if isinstance(f, Falsum):
        return frozenset()
    if isinstance(f, Not):
        return free_vars(f.body)
    if isinstance(f, _Binary):
        return free_vars(f.left) | free_vars(f.right)
    if isinstance(f, _Quantified):
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
    if isinstance(f, _Binary):
        return type(f)(substitute(f.left, old, new), substitute(f.right, old, new))
    if isinstance(f, _Quantified):
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
