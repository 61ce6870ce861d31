"""English rendering of FLD formulas by templates, as FLD does, and its exact inverse parser (which the
symbolic judge needs): one small grammar, written by :func:`render_sentence`, read by :func:`parse_sentence`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from finelogic.logic.formula import FALSUM, And, Atom, Const, Exists, Falsum, ForAll, Formula, Implies, Not, Or, Var
from finelogic.logic.parser import PositionedSyntaxError

VARIABLE = Var("x")  # the only variable the templates render ("it")

KEYWORDS = frozenset(
    "if then both and either or it is not case that for everything there something such this a "
    "contradiction happens does happen".split()
)

# Single-word adjectives for unary predicates (none is a keyword).
ADJECTIVES: tuple[str, ...] = tuple(
    """
    red blue green yellow purple orange brown grey white black pink golden silver crimson violet
    big small tall short wide narrow heavy light thick thin round square flat sharp smooth rough
    soft hard warm cold hot cool wet dry damp clean dirty bright dark shiny dull loud quiet
    calm angry happy sad brave shy proud humble kind cruel gentle fierce clever foolish wise naive
    quick slow lazy busy eager tired sleepy awake hungry thirsty rich poor young old new ancient
    modern fresh stale sweet sour bitter salty spicy bland fragrant smelly tasty juicy crisp ripe
    wooden metallic glassy stony sandy muddy icy snowy rainy windy sunny cloudy foggy stormy misty
    noisy silent famous obscure rare common strange normal odd plain fancy elegant clumsy graceful
    nimble sturdy fragile brittle flexible rigid hollow solid empty full open closed hidden visible
    honest sneaky loyal fickle polite rude cheerful grumpy curious bored nervous relaxed jolly moody
    witty silly serious playful careful careless tidy messy lucky unlucky healthy sickly strong weak
    fast steady shaky hairy bald furry feathery scaly spotted striped dotted woolly silky velvety
    """.split()
)

# Nouns for constants, rendered "the <noun>".
NOUNS: tuple[str, ...] = tuple(
    """
    dog cat horse rabbit fox wolf bear lion tiger eagle owl sparrow crow duck goose swan frog toad
    snake lizard turtle fish whale dolphin shark otter beaver badger mole mouse rat squirrel deer moose
    goat sheep cow pig hen rooster bee wasp ant beetle spider moth butterfly snail crab lobster
    teacher doctor farmer baker sailor pilot painter singer dancer poet judge knight queen king
    """.split()
)

# Nouns for propositions, rendered "the <noun> happens".
EVENTS: tuple[str, ...] = tuple(
    """
    parade concert festival eclipse storm flood drought harvest wedding funeral election auction
    marathon tournament carnival lecture rehearsal ceremony banquet picnic voyage expedition
    migration eruption earthquake landslide blizzard heatwave sunrise sunset blackout reunion
    meeting strike protest celebration fireworks exhibition premiere audition graduation coronation
    debate trial verdict merger launch landing takeoff rescue robbery burglary chase riot truce
    treaty battle siege invasion retreat surrender armistice famine epidemic outbreak recovery rally
    race derby regatta rodeo circus bazaar sale closure opening renovation demolition excavation
    discovery invention experiment inspection investigation interview broadcast recital gala feast
    pilgrimage journey hike climb dive flight crash collision explosion avalanche tsunami hurricane
    tornado cyclone monsoon thaw frost hailstorm downpour drizzle
    """.split()
)


class SentenceParseError(PositionedSyntaxError):
    """A sentence outside the template grammar or the vocabulary; ``position`` counts words (0-based)."""

    def describe(self) -> str:
        return f"{self.message} at word {self.position} of {self.text!r}"


@dataclass(frozen=True)
class Vocabulary:
    """Words for one problem's symbols (``Problem.meta["vocabulary"]``), none a keyword, so parsing is unambiguous."""

    predicates: Mapping[str, str] = field(default_factory=dict)
    propositions: Mapping[str, str] = field(default_factory=dict)
    constants: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind in ("predicates", "propositions", "constants"):
            table = getattr(self, kind)
            words = list(table.values())
            if len(set(words)) != len(words):
                raise ValueError(f"Vocabulary {kind}: two symbols share a word in {dict(table)}")
            for symbol, word in table.items():
                tokens = word.split()
                bad = [t for t in tokens if t in KEYWORDS or not t.isalpha() or t != t.lower()]
                shape_ok = len(tokens) == 1 if kind == "predicates" else len(tokens) == 2 and tokens[0] == "the"
                if bad or not shape_ok:
                    raise ValueError(f"Vocabulary {kind}: {symbol!r} -> {word!r} is not a usable word")
        nouns = set(self.propositions.values()) & set(self.constants.values())
        if nouns:
            raise ValueError(f"Vocabulary: {sorted(nouns)} name both a constant and a proposition")

    def to_dict(self) -> dict[str, dict[str, str]]:
        return {kind: dict(getattr(self, kind)) for kind in ("predicates", "propositions", "constants")}

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, str]]) -> "Vocabulary":
        return cls(dict(d.get("predicates", {})), dict(d.get("propositions", {})), dict(d.get("constants", {})))


def _vocab(vocabulary: Vocabulary | Mapping[str, Any]) -> Vocabulary:
    return vocabulary if isinstance(vocabulary, Vocabulary) else Vocabulary.from_dict(vocabulary)


def render_sentence(formula: Formula, vocabulary: Vocabulary | Mapping[str, Any]) -> str:
    """The English sentence for ``formula``, lower case with a final period, by these templates (each composite
    starts with its own keyword, so nesting is unambiguous)::

        {A}{a}        the dog is red                 ¬{A}{a}     the dog is not red
        {A}           the parade happens             ¬{A}        the parade does not happen
        {A}x          it is red   (x bound by the innermost quantifier; only the variable x is rendered)
        ¬F            it is not the case that F      (F not an atom)
        (F & G)       both F and G                   (F v G)     either F or G
        F -> G        if F then G                    #F#         this is a contradiction
        (x): F        for everything, F              (Ex): F     there is something such that F

    A KeyError for a symbol without a word; a ValueError for a variable other than ``x``, a free variable or
    nested quantifiers.
    """
    return _render(formula, _vocab(vocabulary), bound=False) + "."


def _render(f: Formula, v: Vocabulary, bound: bool) -> str:
    if isinstance(f, Atom):
        return _literal(f, v, bound, negated=False)
    if isinstance(f, Not) and isinstance(f.body, Atom):
        return _literal(f.body, v, bound, negated=True)
    if isinstance(f, Not):
        return "it is not the case that " + _render(f.body, v, bound)
    if isinstance(f, And):
        return f"both {_render(f.left, v, bound)} and {_render(f.right, v, bound)}"
    if isinstance(f, Or):
        return f"either {_render(f.left, v, bound)} or {_render(f.right, v, bound)}"
    if isinstance(f, Implies):
        return f"if {_render(f.left, v, bound)} then {_render(f.right, v, bound)}"
    if isinstance(f, Falsum):
        return "this is a contradiction"
    if isinstance(f, (ForAll, Exists)):
        if f.var != VARIABLE or bound:
            raise ValueError(f"cannot render {f!r}: only one quantifier over x at a time has templates")
        prefix = "for everything, " if isinstance(f, ForAll) else "there is something such that "
        return prefix + _render(f.body, v, bound=True)
    raise TypeError(f"not a formula: {f!r}")


def _literal(atom: Atom, v: Vocabulary, bound: bool, negated: bool) -> str:
    if atom.term is None:
        return f"{v.propositions[atom.predicate]} {'does not happen' if negated else 'happens'}"
    if isinstance(atom.term, Var):
        if atom.term != VARIABLE or not bound:
            raise ValueError(f"cannot render the variable {atom.term.name!r} outside a quantifier over x")
        subject = "it"
    else:
        subject = v.constants[atom.term.name]
    return f"{subject} is {'not ' if negated else ''}{v.predicates[atom.predicate]}"


class _SentenceParser:
    def __init__(self, text: str, v: Vocabulary) -> None:
        self.text = text
        # lower case, commas, trailing punctuation and extra spaces dropped
        self.words = re.sub(r"[.!?;:\s]+$", "", text.strip().lower()).replace(",", " ").split()
        self.i = 0
        self.adjectives = {w: s for s, w in v.predicates.items()}
        self.constants = {tuple(w.split()): s for s, w in v.constants.items()}
        self.events = {tuple(w.split()): s for s, w in v.propositions.items()}

    def fail(self, message: str) -> SentenceParseError:
        found = repr(self.words[self.i]) if self.i < len(self.words) else "end of sentence"
        return SentenceParseError(f"{message}, found {found}", self.text, self.i)

    def at(self, phrase: str) -> bool:
        words = phrase.split()
        return tuple(self.words[self.i : self.i + len(words)]) == tuple(words)

    def expect(self, phrase: str) -> None:
        if not self.accept(phrase):
            raise self.fail(f"expected {phrase!r}")

    def accept(self, phrase: str) -> bool:
        if self.at(phrase):
            self.i += len(phrase.split())
            return True
        return False

    def sentence(self, bound: bool) -> Formula:
        for opening, middle, connective in (("if", "then", Implies), ("both", "and", And), ("either", "or", Or)):
            if self.accept(opening):
                left = self.sentence(bound)
                self.expect(middle)
                return connective(left, self.sentence(bound))
        if self.accept("it is not the case that"):
            return Not(self.sentence(bound))
        if self.accept("this is a contradiction"):
            return FALSUM
        for phrase, quantifier in (("for everything", ForAll), ("there is something such that", Exists)):
            if self.at(phrase):
                if bound:
                    raise self.fail("nested quantifiers have no template")
                self.accept(phrase)
                return quantifier(VARIABLE, self.sentence(bound=True))
        return self.literal(bound)

    def literal(self, bound: bool) -> Formula:
        subject = tuple(self.words[self.i : self.i + 2])  # every name is "the <noun>"
        if subject in self.events:
            self.i += 2
            if self.accept("happens"):
                return Atom(self.events[subject])
            self.expect("does not happen")
            return Not(Atom(self.events[subject]))
        if self.at("it"):
            if not bound:
                raise self.fail("'it' outside 'for everything' / 'there is something such that'")
            self.i += 1
            term: Const | Var = VARIABLE
        elif subject in self.constants:
            self.i += 2
            term = Const(self.constants[subject])
        else:
            raise self.fail("expected a sentence (a known name, 'it', or a connective keyword)")
        self.expect("is")
        negated = self.accept("not")
        if self.i >= len(self.words) or self.words[self.i] not in self.adjectives:
            raise self.fail("expected a known adjective")
        atom = Atom(self.adjectives[self.words[self.i]], term)
        self.i += 1
        return Not(atom) if negated else atom


def parse_sentence(text: str, vocabulary: Vocabulary | Mapping[str, Any]) -> Formula:
    """The formula a sentence of :func:`render_sentence`'s grammar states, tolerant of case, commas, trailing
    punctuation and spaces (and of ``it is not the case that`` before an atom); a :class:`SentenceParseError`
    names the word where parsing stopped."""
    parser = _SentenceParser(text, _vocab(vocabulary))
    if not parser.words:
        raise SentenceParseError("empty sentence", text, 0)
    formula = parser.sentence(bound=False)
    if parser.i != len(parser.words):
        raise parser.fail("expected end of sentence")
    return formula
