"""Entailment between FLD formulas with z3 (``book/methods.md``, "Checking proof steps symbolically").

Premises entail a conclusion when ``premises ∧ ¬conclusion`` is unsatisfiable. One sort ``Entity``; a free
variable (FLD never writes one) is a fixed individual. FLD's prefix quantifiers over predicates of arity ≤ 1
keep every query in the decidable EPR fragment; ``unknown`` (a timeout) raises rather than guessing.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Collection, Iterable, Sequence

import z3

from finelogic.logic.formula import And, Atom, Const, Exists, Falsum, ForAll, Formula, Implies, Not, Or

ENTITY = z3.DeclareSort("Entity")
TIMEOUT_MS = 20_000


class ProverError(RuntimeError):
    """z3 could not decide a query (timeout or resource limit)."""


@lru_cache(maxsize=None)
def _entity(prefix: str, name: str) -> z3.ExprRef:
    """A constant (``prefix`` "c") or variable ("v") of sort ``Entity``."""
    return z3.Const(f"{prefix}_{name}", ENTITY)


@lru_cache(maxsize=65536)
def _to_z3(f: Formula) -> z3.BoolRef:
    if isinstance(f, Atom):
        if f.term is None:
            return z3.Bool(f"p_{f.predicate}")
        term = _entity("c" if isinstance(f.term, Const) else "v", f.term.name)
        return z3.Function(f"P_{f.predicate}", ENTITY, z3.BoolSort())(term)
    if isinstance(f, Falsum):
        return z3.BoolVal(False)
    if isinstance(f, Not):
        return z3.Not(_to_z3(f.body))
    if isinstance(f, And):
        return z3.And(_to_z3(f.left), _to_z3(f.right))
    if isinstance(f, Or):
        return z3.Or(_to_z3(f.left), _to_z3(f.right))
    if isinstance(f, Implies):
        return z3.Implies(_to_z3(f.left), _to_z3(f.right))
    if isinstance(f, ForAll):
        return z3.ForAll([_entity("v", f.var.name)], _to_z3(f.body))
    if isinstance(f, Exists):
        return z3.Exists([_entity("v", f.var.name)], _to_z3(f.body))
    raise TypeError(f"not a formula: {f!r}")


@lru_cache(maxsize=1)
def _solver() -> z3.Solver:
    # One incremental solver reused with push/pop (much faster than a fresh one per query); not thread-safe.
    solver = z3.Solver()
    solver.set("timeout", TIMEOUT_MS)
    return solver


def _sat(assertions: list[Any], what: str) -> bool:
    """Whether the z3 ``assertions`` are satisfiable, on the shared solver; unknown is an error."""
    solver = _solver()
    solver.push()
    try:
        solver.add(*assertions)
        result = solver.check()
        if result == z3.unknown:
            raise ProverError(f"z3 returned unknown ({solver.reason_unknown()}) on {what}")
        return result == z3.sat
    finally:
        solver.pop()


@lru_cache(maxsize=65536)
def _satisfiable(formulas: frozenset[Formula]) -> bool:
    return _sat([_to_z3(f) for f in formulas], f"{len(formulas)} formulas")


def entails(premises: Iterable[Formula], conclusion: Formula) -> bool:
    """True when every model of ``premises`` satisfies ``conclusion``; cached on the set of formulas."""
    return not _satisfiable(frozenset(premises) | {Not(conclusion)})


def consistent(formulas: Iterable[Formula]) -> bool:
    """True when ``formulas`` have a common model (the empty set is consistent)."""
    return _satisfiable(frozenset(formulas))


def entails_each(steps: Iterable[tuple[Iterable[Formula], Formula]]) -> bool:
    """True when every ``(premises, conclusion)`` pair is valid, decided by one z3 call: all are valid exactly
    when the disjunction of their ``∧premises ∧ ¬conclusion`` is unsatisfiable."""
    disjuncts = [z3.And(*[_to_z3(p) for p in premises], z3.Not(_to_z3(c))) for premises, c in steps]
    if not disjuncts:
        return True
    return not _sat([z3.Or(*disjuncts)], f"{len(disjuncts)} steps")


class Theory:
    """Facts loaded into z3 once and queried about their subsets inside a ``with`` block (``with Theory(facts) as
    t: t.entails(goal, without=[facts[0]])``): each fact sits behind a guard literal and a query assumes the wanted
    guards, so "do the facts without fact k entail G?" is one incremental check (the FLD generator's distractor
    check). Other queries may run inside the block: a fact whose guard is not assumed constrains nothing."""

    _serial = 0

    def __init__(self, facts: Sequence[Formula]) -> None:
        self.facts = tuple(facts)
        self._open = False
        self._negations: dict[Formula, z3.BoolRef] = {}
        Theory._serial += 1
        self._name = f"theory{Theory._serial}"
        self._guards = [z3.Bool(f"{self._name}_fact{i}") for i in range(len(self.facts))]

    def __enter__(self) -> "Theory":
        solver = _solver()
        solver.push()
        self._open = True
        solver.add(*[z3.Implies(g, _to_z3(f)) for g, f in zip(self._guards, self.facts)])
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._open = False
        self._negations.clear()
        _solver().pop()

    def _check(self, without: Collection[Formula], extra: list[z3.BoolRef]) -> bool:
        if not self._open:
            raise RuntimeError("query a Theory inside its with-block: `with Theory(facts) as t: ...`")
        unknown = [f for f in without if f not in self.facts]
        if unknown:
            raise ValueError(f"not facts of this theory: {unknown}")
        on = [g for g, f in zip(self._guards, self.facts) if f not in without]
        solver = _solver()
        result = solver.check(*on, *extra)
        if result == z3.unknown:
            raise ProverError(f"z3 returned unknown ({solver.reason_unknown()})")
        return result == z3.sat

    def entails(self, conclusion: Formula, without: Collection[Formula] = ()) -> bool:
        """Do the facts, except those in ``without``, entail ``conclusion``?"""
        if conclusion not in self._negations and self._open:
            guard = z3.Bool(f"{self._name}_negation{len(self._negations)}")
            _solver().add(z3.Implies(guard, z3.Not(_to_z3(conclusion))))
            self._negations[conclusion] = guard
        return not self._check(without, [self._negations.get(conclusion)])

    def consistent(self, without: Collection[Formula] = ()) -> bool:
        """Do the facts, except those in ``without``, have a model?"""
        return self._check(without, [])
