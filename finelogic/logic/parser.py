"""Parse FLD formal notation (``book/data-formats.md``, "Formal notation") into :mod:`finelogic.logic.formula`."""
from __future__ import annotations

import re
from functools import lru_cache

from finelogic.logic.formula import FALSUM, And, Atom, Const, Exists, ForAll, Formula, Implies, Not, Or, Var


class PositionedSyntaxError(ValueError):
    """A text outside a grammar: ``message`` says what, ``text`` and ``position`` (0-based) where; subclasses
    say what ``position`` counts by overriding :meth:`describe`."""

    def __init__(self, message: str, text: str, position: int) -> None:
        self.message = message
        self.text = text
        self.position = position
        super().__init__(self.describe())

    def describe(self) -> str:
        return f"{self.message} at position {self.position} in {self.text!r}"


class FormulaSyntaxError(PositionedSyntaxError):
    """A formula text that is not FLD notation; ``position`` counts characters (0-based)."""

    def describe(self) -> str:
        return f"{super().describe()}\n  {self.text}\n  {' ' * self.position}^"


_TOKEN = re.compile(
    r"""
    (?P<quant>\(\s*(?P<exists>E?)(?P<qvar>[xyz][0-9]*)\s*\)\s*:)
  | (?P<falsum>\#F\#)
  | (?P<arrow>->)
  | (?P<not>¬)
  | (?P<and>&)
  | (?P<or>v(?![A-Za-z0-9_]))
  | (?P<lpar>\()
  | (?P<rpar>\))
  | (?P<pred>\{(?P<pname>[A-Z][A-Za-z0-9_]*)\})
  | (?P<const>\{(?P<cname>[a-z][a-z0-9_]*)\})
  | (?P<var>[xyz][0-9]*(?![A-Za-z_]))
    """,
    re.VERBOSE,
)


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    """(kind, value, position) triples, ending with ("end", "", len(text))."""
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            tokens.append(("end", "", pos))
            return tokens
        m = _TOKEN.match(text, pos)
        if m is None:
            raise FormulaSyntaxError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup  # the outer group: it closes after the inner groups that capture names
        if kind == "quant":
            value = ("E" if m.group("exists") else "") + m.group("qvar")
        elif kind == "pred":
            value = m.group("pname")
        elif kind == "const":
            value = m.group("cname")
        else:
            value = m.group(0)
        tokens.append((kind, value, pos))
        pos = m.end()


class _Parser:
    """Recursive descent over this grammar (whitespace between tokens ignored)::

        formula     := QUANT formula | implication          QUANT is "(x):" or "(Ex):"; its body extends right
        implication := junction [ "->" formula ]             right-associative
        junction    := unary { ("&" | "v") unary }           one operator per level: mixing & and v needs ()
        unary       := "¬" unary | QUANT formula | primary
        primary     := "(" formula ")" | "#F#" | atom
        atom        := "{" PRED "}" [ "{" const "}" | VAR ]  PRED starts upper-case, const lower-case

    Variables are ``x``, ``y``, ``z`` and digits; a bare ``v`` is always the disjunction; ``A & B & C`` is
    ``((A & B) & C)``.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    @property
    def kind(self) -> str:
        return self.tokens[self.i][0]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def fail(self, message: str) -> FormulaSyntaxError:
        _, value, pos = self.tokens[self.i]
        found = "end of text" if self.kind == "end" else repr(value)
        return FormulaSyntaxError(f"{message}, found {found}", self.text, pos)

    def formula(self) -> Formula:
        if self.kind == "quant":
            return self.quantified()
        left = self.junction()
        if self.kind == "arrow":
            self.take()
            return Implies(left, self.formula())
        return left

    def quantified(self) -> Formula:
        _, value, _ = self.take()
        body = self.formula()
        if value.startswith("E"):
            return Exists(Var(value[1:]), body)
        return ForAll(Var(value), body)

    def junction(self) -> Formula:
        left = self.unary()
        op = None
        while self.kind in ("and", "or"):
            if op is not None and self.kind != op:
                raise self.fail("mixing '&' and 'v' needs parentheses")
            op = self.kind
            self.take()
            right = self.unary()
            left = And(left, right) if op == "and" else Or(left, right)
        return left

    def unary(self) -> Formula:
        if self.kind == "not":
            self.take()
            return Not(self.unary())
        if self.kind == "quant":
            return self.quantified()
        return self.primary()

    def primary(self) -> Formula:
        if self.kind == "lpar":
            self.take()
            inner = self.formula()
            if self.kind != "rpar":
                raise self.fail("expected ')'")
            self.take()
            return inner
        if self.kind == "falsum":
            self.take()
            return FALSUM
        if self.kind == "pred":
            _, name, _ = self.take()
            if self.kind == "const":
                return Atom(name, Const(self.take()[1]))
            if self.kind == "var":
                return Atom(name, Var(self.take()[1]))
            return Atom(name)
        raise self.fail("expected a formula ('{A}...', '¬', '(', '#F#' or a quantifier)")


@lru_cache(maxsize=65536)
def parse_formula(text: str) -> Formula:
    """Parse one formula in FLD notation, e.g. ``(x): ¬({B}x & {D}x) -> ¬{D}x`` (cached: it is immutable); a
    :class:`FormulaSyntaxError` names the text and the 0-based position of the offending token."""
    parser = _Parser(text)
    result = parser.formula()
    if parser.kind != "end":
        raise parser.fail("expected end of formula")
    return result
