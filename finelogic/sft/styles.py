"""The four supervision styles of the paper's Section 4 (Figure 4), built from gold proofs.

:func:`build` writes the assistant turn of one training example for a generated FLD-style
(:mod:`finelogic.data.generators.fld`) or ProntoQA-style (:mod:`finelogic.data.generators.prontoqa`)
problem; :func:`check` reads the text back and judges every logical claim in it with
:class:`~finelogic.eval.judges.SymbolicJudge`, so a bug in a builder shows up as an invalid line.

The styles (the connective phrasing is ours; no model writes any of it):

- ``NL``: natural language only. One line per step, ``Step 2: From step 1 and fact4, it follows that
  the dog is red.``; facts are cited by id, earlier conclusions by step number; the last step says
  ``which is the hypothesis`` (PROVED) or ``which is the negation of the hypothesis`` (DISPROVED).
- ``Symb-Struct``: define every constant and predicate (``{a} = the dog``, ``{A}x = x is red``,
  ``{A} = the parade happens``), translate every fact and the hypothesis into FLD formal notation
  (``fact1: {A}{a} -> {B}{a}``), then reason in formulas with FLD proof notation, one step per line:
  ``fact3 & int1 -> int2: {B}{a};``; the last step concludes ``hypothesis`` or ``¬hypothesis`` and
  writes that formula too.
- ``Symb-Filter``: as Struct, but only the facts the gold proof cites are listed, defined and translated.
- ``Symb-Direct``: the facts and the hypothesis written directly as formulas, no definitions; then the
  same symbolic steps.

Every style ends with ``Therefore, the hypothesis is proved.`` (disproved / cannot be decided) and the
paper's marker (``__PROVED__``, ``__DISPROVED__``, ``__UNKNOWN__``) on a line of its own, the marker the
accuracy evaluation's extraction (:func:`finelogic.eval.extraction.extract_answer`) reads.

**The steps** are the gold proof's steps (:func:`gold_steps`) with one change: a step that applies a
universal rule to a fact in one go (ProntoQA's ``Polly is a wumpus. Every wumpus is a rompus. ⊢ Polly is
a rompus``: universal instantiation plus modus ponens) is written as FLD writes it, two steps, the
instance ``{A}{a} -> {B}{a}`` first. Then every step applies exactly one deduction rule of
:data:`finelogic.logic.RULES`, and intermediate conclusions are renumbered ``int1, int2, ...`` in order.

**UNKNOWN** problems: the FLD generator keeps no proof for them (it removed one leaf of a proof tree, so
the facts entail neither the hypothesis nor its negation; ``meta["distractors"]`` still names the facts
that were never part of that tree). The texts therefore contain no step: they say that no chain of steps
reaches the hypothesis or its negation and close with the paper's status message (Figure 11;
:data:`finelogic.prompts.UNKNOWN_EXPLANATION`) and ``__UNKNOWN__``. Symb-Struct and Symb-Direct still
translate every fact; Symb-Filter translates the facts of the incomplete proof (the non-distractors).

**Supported problems**: those with formulas for every fact and the hypothesis and a vocabulary in
``meta["vocabulary"]`` (the FLD generator's template vocabulary, or ProntoQA's ``{"{A}": "wumpus",
"{a}": "Polly"}``). Others raise :class:`StyleError` naming the problem, the style and what is missing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Protocol, Sequence

from finelogic.data.generators.fld import parse_proof_steps
from finelogic.data.generators.nl import (
    ADJECTIVES,
    EVENTS,
    NOUNS,
    Vocabulary,
    parse_sentence,
    render_sentence,
)
from finelogic.data.generators.prontoqa import CONCEPTS
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.eval.judges import SymbolicJudge, Verdict
from finelogic.eval.steps import HYPOTHESIS, NEGATED_HYPOTHESIS, Step, template_vocabulary
from finelogic.logic import (
    Atom,
    Const,
    ForAll,
    Formula,
    FormulaSyntaxError,
    Implies,
    Not,
    constants,
    format_formula,
    matches_rule,
    negate,
    parse_formula,
    subformulas,
    substitute,
)
from finelogic.prompts import MARKERS, UNKNOWN_EXPLANATION

NL, STRUCT, FILTER, DIRECT = "NL", "Symb-Struct", "Symb-Filter", "Symb-Direct"
STYLES = (NL, STRUCT, FILTER, DIRECT)

#: The closing sentence before the marker, per label.
CLOSING = {
    PROVED: "Therefore, the hypothesis is proved.",
    DISPROVED: "Therefore, the hypothesis is disproved.",
    UNKNOWN: "Therefore, the hypothesis can be neither proved nor disproved.",
}
NO_DERIVATION = "No chain of steps from the facts reaches the hypothesis or its negation."

_TARGET = {PROVED: HYPOTHESIS, DISPROVED: NEGATED_HYPOTHESIS}
_SYMBOL = r"\{[A-Za-z][A-Za-z0-9_]*\}"
_ID = r"(?:fact|int)\d+"
_DEFINITION_LINE = re.compile(rf"^(?P<symbol>{_SYMBOL})(?P<var>x?) = (?P<meaning>.+)$")
_TRANSLATION_LINE = re.compile(r"^(?P<id>fact\d+|hypothesis): (?P<formula>.+)$")
_SYMBOLIC_STEP = re.compile(rf"^(?P<premises>{_ID}(?: & {_ID})*) -> (?P<conclusion>int\d+|¬?hypothesis): "
                            r"(?P<formula>.+);$")
_NL_STEP = re.compile(r"^Step (?P<number>\d+): From (?P<premises>.+?), it follows that (?P<sentence>.+?)"
                      r"(?P<tail>, which is the hypothesis|, which is the negation of the hypothesis)?\.$")
_NL_TAIL = {HYPOTHESIS: ", which is the hypothesis", NEGATED_HYPOTHESIS: ", which is the negation of the hypothesis"}


class StyleError(ValueError):
    """A problem the styles cannot be built for, or an unknown style; the message names both."""


@dataclass(frozen=True)
class GoldStep:
    """One step of the normalised gold proof: ``premises -> conclusion`` deriving ``formula``.

    ``conclusion`` is ``intN``, ``hypothesis`` or ``¬hypothesis``; ``formula`` is what it states
    (for ``¬hypothesis`` the :func:`~finelogic.logic.negate` of the hypothesis).
    """

    premises: tuple[str, ...]
    conclusion: str
    formula: Formula


# ----------------------------------------------------------------------------------------------------
# Words: how a problem's symbols read in English (FLD template vocabulary or ProntoQA's)


class _Words(Protocol):
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


def _words(problem: Problem, style: str) -> _Words:
    vocabulary = template_vocabulary(problem)
    if vocabulary is not None:
        return _TemplateWords(vocabulary)
    raw = problem.meta.get("vocabulary")
    if isinstance(raw, Mapping) and raw and all(re.fullmatch(_SYMBOL, k) for k in raw):
        return _ProntoQAWords(raw)
    raise StyleError(f"problem {problem.id!r}, style {style!r}: no vocabulary for its symbols in "
                     "meta['vocabulary'] (only generated FLD- and ProntoQA-style problems are supported)")


# ----------------------------------------------------------------------------------------------------
# The normalised gold proof


def _formulas(problem: Problem, style: str) -> dict[str, Formula]:
    """Every formula of the problem, parsed, with ``¬hypothesis``; errors name the problem."""
    missing = [i for i in [*(f.id for f in problem.facts), HYPOTHESIS] if i not in problem.formulas]
    if missing:
        raise StyleError(f"problem {problem.id!r}, style {style!r}: no formula for {', '.join(missing)} "
                         "(the styles need formulas for every fact and the hypothesis)")
    try:
        parsed = {k: parse_formula(v) for k, v in problem.formulas.items()}
    except FormulaSyntaxError as error:
        raise StyleError(f"problem {problem.id!r}, style {style!r}: {error}") from error
    parsed[NEGATED_HYPOTHESIS] = negate(parsed[HYPOTHESIS])
    return parsed


def gold_steps(problem: Problem, style: str = "") -> list[GoldStep]:
    """The gold proof as :class:`GoldStep` s: one deduction rule per step, ``int1, int2, ...`` in order.

    A step of two premises, one universal, that no single rule derives is split into universal
    instantiation (a new ``int``) and the step from that instance (see the module docstring). An UNKNOWN
    problem has no steps.

    Raises:
        StyleError: the problem lacks formulas, or a labelled problem lacks a proof.
    """
    gold = _formulas(problem, style)
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


# ----------------------------------------------------------------------------------------------------
# Building


def build(style: str, problem: Problem) -> str:
    """The assistant turn of a training example: ``problem`` solved in supervision style ``style``.

    Args:
        style: one of :data:`STYLES` (see the module docstring for each).
        problem: a generated FLD- or ProntoQA-style problem with a label, formulas and a vocabulary.

    Returns:
        The text, lines joined by ``\\n``, ending with the label's marker. Deterministic: the same
        problem gives byte-identical text.

    Raises:
        StyleError: unknown style (the message lists the valid ones) or an unsupported problem.
    """
    if style not in STYLES:
        raise StyleError(f"unknown supervision style {style!r}; choose one of {', '.join(STYLES)}")
    if problem.label is None:
        raise StyleError(f"problem {problem.id!r}, style {style!r}: a multiple-choice item has no label")
    steps = gold_steps(problem, style)
    words = _words(problem, style)
    if style == NL:
        lines = _nl_lines(problem, steps, words)
    else:
        lines = _symbolic_lines(style, problem, steps, words)
    return "\n".join([*lines, CLOSING[problem.label], MARKERS[problem.label]])


def _nl_lines(problem: Problem, steps: Sequence[GoldStep], words: _Words) -> list[str]:
    lines = ["Let us reason step by step."]
    step_of: dict[str, int] = {}
    for number, step in enumerate(steps, start=1):
        cited = [f"step {step_of[p]}" if p in step_of else p for p in step.premises]
        tail = _NL_TAIL.get(step.conclusion, "")
        lines.append(f"Step {number}: From {_and_list(cited)}, it follows that {words.sentence(step.formula)}{tail}.")
        step_of[step.conclusion] = number
    if problem.label == UNKNOWN:
        lines += [NO_DERIVATION, UNKNOWN_EXPLANATION]
    return lines


def _and_list(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def used_facts(problem: Problem, steps: Sequence[GoldStep]) -> list[str]:
    """Fact ids Symb-Filter keeps, in the problem's order: those the steps cite (UNKNOWN: the facts not
    listed in ``meta["distractors"]``, i.e. the leaves left of the incomplete proof; all facts when the
    problem lists no distractors)."""
    if problem.label == UNKNOWN:
        drop = set(problem.meta.get("distractors", ()))
        return [f.id for f in problem.facts if f.id not in drop]
    cited = {p for s in steps for p in s.premises}
    return [f.id for f in problem.facts if f.id in cited]


def _symbolic_lines(style: str, problem: Problem, steps: Sequence[GoldStep], words: _Words) -> list[str]:
    formulas = _formulas(problem, style)
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


def _symbols(formulas: Iterable[Formula]) -> tuple[list[str], list[str], list[str]]:
    """Constants, unary predicates and propositions of ``formulas`` (bare names, FLD order A..Z, AA..)."""
    atoms = {g for f in formulas for g in subformulas(f) if isinstance(g, Atom)}
    order = lambda name: (len(name), name)  # noqa: E731 - a sort key
    consts = sorted({a.term.name for a in atoms if isinstance(a.term, Const)}, key=order)
    unary = sorted({a.predicate for a in atoms if a.term is not None}, key=order)
    props = sorted({a.predicate for a in atoms if a.term is None}, key=order)
    return consts, unary, props


def _definition_lines(formulas: Iterable[Formula], words: _Words) -> list[str]:
    consts, unary, props = _symbols(formulas)
    lines = []
    for title, names, suffix, is_unary in (("Constants:", consts, "", False), ("Predicates:", unary, "x", True),
                                           ("Propositions:", props, "", False)):
        if names:
            lines.append(title)
            lines += [f"{{{n}}}{suffix} = {words.meaning('{' + n + '}', is_unary)}" for n in names]
    return lines


# ----------------------------------------------------------------------------------------------------
# Reading back and judging


@dataclass(frozen=True)
class _ReadStep:
    line: str
    premises: tuple[str, ...]
    conclusion: str
    formula: Formula | None
    error: str = ""


@dataclass
class _Reading:
    definitions: list[tuple[str, str, bool, str]]  # line, symbol, unary, meaning
    translations: dict[str, tuple[str, Formula | None]]  # id -> (line, formula or None when unparseable)
    steps: list[_ReadStep]
    findings: list[Verdict]


def _finding(valid: bool, reason: str) -> Verdict:
    # Definitions and translations state no inference: atomic mirrors valid.
    return Verdict(valid, valid, reason, "symbolic")


def _read(style: str, text: str, words: _Words) -> _Reading:
    """Parse a built text into definitions, translations and steps; unreadable lines become findings."""
    reading = _Reading([], {}, [], [])
    for line in text.split("\n"):
        if style == NL:
            if line.startswith("Step "):
                reading.steps.append(_read_nl_step(line, len(reading.steps) + 1, words))
            continue
        if m := _SYMBOLIC_STEP.match(line):
            reading.steps.append(_read_symbolic_step(line, m))
        elif m := _DEFINITION_LINE.match(line):
            reading.definitions.append((line, m["symbol"], bool(m["var"]), m["meaning"]))
        elif m := _TRANSLATION_LINE.match(line):
            try:
                formula: Formula | None = parse_formula(m["formula"])
            except FormulaSyntaxError as error:
                formula = None
                reading.findings.append(_finding(False, f"{line!r}: formula does not parse ({error.message})"))
            reading.translations[m["id"]] = (line, formula)
        elif "->" in line or " = " in line:
            reading.findings.append(_finding(False, f"{line!r}: looks like a step or definition but is not one"))
    return reading


def _read_symbolic_step(line: str, m: re.Match) -> _ReadStep:
    premises = tuple(m["premises"].split(" & "))
    try:
        return _ReadStep(line, premises, m["conclusion"], parse_formula(m["formula"]))
    except FormulaSyntaxError as error:
        return _ReadStep(line, premises, m["conclusion"], None, f"formula does not parse ({error.message})")


def _read_nl_step(line: str, number: int, words: _Words) -> _ReadStep:
    m = _NL_STEP.match(line)
    if m is None or int(m["number"]) != number:
        return _ReadStep(line, (), f"int{number}", None, f"not a step line numbered {number}")
    premises = []
    for cited in re.split(r", | and ", m["premises"]):
        ref = re.fullmatch(r"step (\d+)|(fact\d+)", cited)
        if ref is None:
            return _ReadStep(line, (), f"int{number}", None, f"cites {cited!r}, not a fact or a step")
        premises.append(f"int{ref[1]}" if ref[1] else ref[2])
    conclusion = {v: k for k, v in _NL_TAIL.items()}.get(m["tail"] or "", f"int{number}")
    try:
        return _ReadStep(line, tuple(premises), conclusion, words.formula(m["sentence"]))
    except ValueError as error:  # SentenceParseError is a ValueError
        return _ReadStep(line, tuple(premises), conclusion, None, f"sentence outside the grammar ({error})")


def check(style: str, problem: Problem, text: str | None = None) -> list[Verdict]:
    """Judge every logical claim of a style's text; all valid and atomic means the text is sound.

    The text (default: ``build(style, problem)``) is read back line by line and yields, in order, one
    invalid verdict per unreadable line (it looks like a step, definition or translation but does not
    parse), then:

    - one verdict per definition (``{A}x = x is red``): valid when it agrees with how the problem's
      sentences read, e.g. ``{A}{a}`` rendered in English equals the definition with ``x`` := the
      constant's meaning;
    - one per translation (``fact3: {A}{a}``): valid when it is the problem's formula for that id;
      plus one on coverage: Struct and Direct translate every fact and the hypothesis, Filter exactly the
      facts its steps cite (UNKNOWN: those of :func:`used_facts`), and Struct / Filter define every symbol
      they write;
    - one per step, from :class:`~finelogic.eval.judges.SymbolicJudge` (z3 validity, one-rule atomicity):
      premises are the text's own translations (NL: the problem's formulas) and earlier conclusions; a
      step concluding ``hypothesis`` / ``¬hypothesis`` must also write that formula;
    - one on the end: the last step concludes the label's target and the text ends with its marker.

    For definitions, translations and these structural checks ``atomic`` mirrors ``valid``; a step the
    judge cannot decide (it cites an id not stated before it) has ``valid`` None, which counts as a
    failure. ``reason`` starts with the line at fault.

    Raises:
        StyleError: unknown style or a problem the styles do not support (see :func:`build`).
    """
    if text is None:
        text = build(style, problem)
    elif style not in STYLES:
        raise StyleError(f"unknown supervision style {style!r}; choose one of {', '.join(STYLES)}")
    words = _words(problem, style)
    gold = _formulas(problem, style)
    reading = _read(style, text, words)
    verdicts = list(reading.findings)
    if style != NL:
        verdicts += _check_definitions(style, reading, words)
        verdicts += _check_translations(style, problem, reading, gold)
        premises = {k: f for k, (_, f) in reading.translations.items() if f is not None}
    else:
        premises = {f.id: gold[f.id] for f in problem.facts} | {HYPOTHESIS: gold[HYPOTHESIS]}
    verdicts += _judge_steps(problem, reading.steps, premises)
    verdicts += _check_end(problem, text, reading.steps)
    return verdicts


def _check_definitions(style: str, reading: _Reading, words: _Words) -> list[Verdict]:
    """Each definition against the problem's English: ``{A}x = x is red`` holds when ``{A}{c}`` reads
    "<the text's meaning of {c}> is red"; ``{c} = the dog`` when ``{A}{c}`` starts "the dog "; ``{P} = the
    parade happens`` when ``{P}`` reads so. Struct and Filter must define every symbol they write."""
    out = []
    constant_meaning = {s.strip("{}"): m for _, s, unary, m in reading.definitions if s[1].islower()}
    unary_names = sorted(s.strip("{}") for _, s, unary, _ in reading.definitions if unary)
    for line, symbol, unary, meaning in reading.definitions:
        name = symbol.strip("{}")
        try:
            if name[0].islower():  # a constant: read it through the first predicate defined
                ok = not unary and (not unary_names or
                                    words.sentence(Atom(unary_names[0], Const(name))).startswith(meaning + " "))
            elif unary:  # a predicate: read it of the first constant defined
                c = min(constant_meaning, default=None)
                ok = meaning.startswith("x ") and (
                    c is None or words.sentence(Atom(name, Const(c))) == constant_meaning[c] + meaning[1:])
            else:
                ok = words.sentence(Atom(name)) == meaning
        except (KeyError, ValueError) as error:  # a symbol the problem's vocabulary does not know
            ok, line = False, f"{line} ({type(error).__name__}: {error})"
        out.append(_finding(ok, f"{line!r}: definition {'agrees' if ok else 'disagrees'} with the problem's sentences"))
    if style in (STRUCT, FILTER):
        written = [f for _, f in reading.translations.values() if f is not None]
        written += [s.formula for s in reading.steps if s.formula is not None]
        consts, unary, props = _symbols(written)
        needed = {f"{{{n}}}" for n in consts + props} | {f"{{{n}}}x" for n in unary}
        defined = {f"{s}{'x' if u else ''}" for _, s, u, _ in reading.definitions}
        missing = sorted(needed - defined)
        out.append(_finding(not missing, "every symbol written is defined" if not missing
                            else f"symbols written but not defined: {', '.join(missing)}"))
    return out


def _check_translations(style: str, problem: Problem, reading: _Reading, gold: Mapping[str, Formula]) -> list[Verdict]:
    out = []
    for key, (line, formula) in reading.translations.items():
        if formula is None:
            continue  # already reported as unparseable
        ok = key in gold and formula == gold[key]
        out.append(_finding(ok, f"{line!r}: translation {'matches' if ok else 'differs from'} the problem's formula"))
    if style == FILTER:
        if problem.label == UNKNOWN:
            expected = set(used_facts(problem, []))
        else:
            expected = {p for s in reading.steps for p in s.premises if p.startswith("fact")}
    else:
        expected = {f.id for f in problem.facts}
    written = {k for k in reading.translations if k != HYPOTHESIS}
    problems = []
    if HYPOTHESIS not in reading.translations:
        problems.append("the hypothesis is not translated")
    if written != expected:
        problems.append(f"facts translated {sorted(written)} but {style} needs {sorted(expected)}")
    out.append(_finding(not problems, "; ".join(problems) or "the translated facts are the ones the style needs"))
    return out


def _judge_steps(problem: Problem, steps: Sequence[_ReadStep], premises: Mapping[str, Formula]) -> list[Verdict]:
    """One SymbolicJudge verdict per step, on a view of the problem whose facts are ``premises`` and whose
    sentences use a neutral template vocabulary (so FLD and ProntoQA problems are judged alike)."""
    formulas = [*premises.values(), *(s.formula for s in steps if s.formula is not None)]
    vocabulary = _neutral_vocabulary(formulas)
    view = replace(problem, formulas={k: format_formula(f) for k, f in premises.items()},
                   meta={"vocabulary": vocabulary.to_dict()})
    judge = SymbolicJudge()
    defined: dict[str, str] = {}
    out = []
    for index, step in enumerate(steps):
        if step.formula is None:
            out.append(_finding(False, f"{step.line!r}: {step.error}"))
            continue
        try:
            sentence = render_sentence(step.formula, vocabulary)
        except ValueError as error:  # e.g. a variable other than x: outside the judge's grammar
            out.append(_finding(False, f"{step.line!r}: the judge cannot read this formula ({error})"))
            continue
        # The judge reads facts from the view's formulas and ints from the sentences defined so far.
        texts = tuple(defined.get(p) if p.startswith("int") else "" for p in step.premises)
        verdict = judge.judge(Step(index, step.line, step.premises, texts, step.conclusion, sentence), view)
        if step.conclusion in (HYPOTHESIS, NEGATED_HYPOTHESIS) and HYPOTHESIS in premises:
            target = premises[HYPOTHESIS] if step.conclusion == HYPOTHESIS else negate(premises[HYPOTHESIS])
            if step.formula != target:
                verdict = Verdict(False, False, f"writes {format_formula(step.formula)} for {step.conclusion}, "
                                  f"which is {format_formula(target)}", "symbolic")
        out.append(replace(verdict, reason=f"{step.line!r}: {verdict.reason}"))
        if step.conclusion.startswith("int"):
            defined[step.conclusion] = sentence
    return out


def _neutral_vocabulary(formulas: Iterable[Formula]) -> Vocabulary:
    """A template vocabulary naming every symbol of ``formulas`` (the judge reads intermediate
    conclusions as sentences; these words only carry the formulas through)."""
    consts, unary, props = _symbols(formulas)
    if len(consts) > len(NOUNS) or len(unary) > len(ADJECTIVES) or len(props) > len(EVENTS):
        raise StyleError(f"too many symbols to judge: {len(consts)} constants, {len(unary)} predicates, "
                         f"{len(props)} propositions")
    return Vocabulary(predicates=dict(zip(unary, ADJECTIVES)),
                      propositions={p: "the " + w for p, w in zip(props, EVENTS)},
                      constants={c: "the " + w for c, w in zip(consts, NOUNS)})


def _check_end(problem: Problem, text: str, steps: Sequence[_ReadStep]) -> list[Verdict]:
    problems = []
    if problem.label == UNKNOWN:
        if steps:
            problems.append("an UNKNOWN text should state no step")
    elif not steps or steps[-1].conclusion != _TARGET[problem.label]:
        problems.append(f"the last step does not conclude {_TARGET[problem.label]}")
    if not text.endswith("\n" + MARKERS[problem.label]):
        problems.append(f"the text does not end with {MARKERS[problem.label]}")
    return [_finding(not problems, "; ".join(problems) or f"ends with {_TARGET.get(problem.label, 'no step')} "
                     f"and {MARKERS[problem.label]}")]
