"""Reading a supervision-style text back and judging every logical claim in it (paper Section 4, Figure 4).

:func:`check` is the counterpart of :func:`finelogic.sft.styles.build`: it reads a built text line by line
and judges each definition, translation and step, so a bug in a builder shows up as an invalid line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from finelogic.data.generators.nl import ADJECTIVES, EVENTS, NOUNS, Vocabulary, render_sentence
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.eval.judges import SymbolicJudge, Verdict
from finelogic.eval.steps import HYPOTHESIS, NEGATED_HYPOTHESIS, Step, read_nl_step
from finelogic.logic import Atom, Const, Formula, FormulaSyntaxError, format_formula, negate, parse_formula
from finelogic.prompts import MARKERS
from finelogic.sft.styles import (FILTER, NL, STRUCT, STYLES, SYMBOL, StyleError, Words, build, style_formulas,
                                  symbols_of, used_facts, words_for)

_TARGET = {PROVED: HYPOTHESIS, DISPROVED: NEGATED_HYPOTHESIS}
_ID = r"(?:fact|int)\d+"
_DEFINITION_LINE = re.compile(rf"^(?P<symbol>{SYMBOL})(?P<var>x?) = (?P<meaning>.+)$")
_TRANSLATION_LINE = re.compile(r"^(?P<id>fact\d+|hypothesis): (?P<formula>.+)$")
_SYMBOLIC_STEP = re.compile(rf"^(?P<premises>{_ID}(?: & {_ID})*) -> (?P<conclusion>int\d+|¬?hypothesis): "
                            r"(?P<formula>.+);$")
_NL_STEP_LINE = re.compile(r"^Step (?P<number>\d+): (?P<rest>.+)$")


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


def _read(style: str, text: str, words: Words) -> _Reading:
    """Parse a built text into definitions, translations and steps; unreadable lines become findings."""
    reading = _Reading([], {}, [], [])
    for line in text.split("\n"):
        if style == NL:
            if line.startswith("Step "):
                reading.steps.append(_read_nl_step(line, len(reading.steps) + 1, words))
            continue
        if m := _SYMBOLIC_STEP.match(line):
            premises, conclusion = tuple(m["premises"].split(" & ")), m["conclusion"]
            try:
                reading.steps.append(_ReadStep(line, premises, conclusion, parse_formula(m["formula"])))
            except FormulaSyntaxError as error:
                reading.steps.append(_ReadStep(line, premises, conclusion, None,
                                               f"formula does not parse ({error.message})"))
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


def _read_nl_step(line: str, number: int, words: Words) -> _ReadStep:
    m = _NL_STEP_LINE.match(line)
    if m is None or int(m["number"]) != number:
        return _ReadStep(line, (), f"int{number}", None, f"not a step line numbered {number}")
    step = read_nl_step(number - 1, number, m["rest"])
    if not step.parsed:
        return _ReadStep(line, (), f"int{number}", None, step.note)
    premises, conclusion = tuple(step.premises), step.conclusion_id or f"int{number}"
    try:
        return _ReadStep(line, premises, conclusion, words.formula(step.conclusion_text or ""))
    except ValueError as error:  # SentenceParseError is a ValueError
        return _ReadStep(line, premises, conclusion, None, f"sentence outside the grammar ({error})")


def check(style: str, problem: Problem, text: str | None = None) -> list[Verdict]:
    """Judge every logical claim of a style's text (default ``build(style, problem)``), in order: one invalid
    verdict per line that looks like a step, definition or translation but does not parse; one per definition
    (valid when it agrees with the problem's English); one per translation (valid when it is the problem's
    formula) and one on coverage (Struct and Direct translate every fact and the hypothesis, Filter exactly the
    facts its steps cite; Struct and Filter define every symbol they write); one per step from
    :class:`~finelogic.eval.judges.SymbolicJudge` over the text's own translations (NL: the problem's
    formulas); one on the end (the last step concludes the label's target, the text ends with its marker).
    Sound means all valid and atomic; an undecided step counts as a failure; ``reason`` starts with the line
    at fault. StyleError as :func:`~finelogic.sft.styles.build` raises it."""
    if text is None:
        text = build(style, problem)
    elif style not in STYLES:
        raise StyleError(f"unknown supervision style {style!r}; choose one of {', '.join(STYLES)}")
    words = words_for(problem, style)
    gold = style_formulas(problem, style)
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


def _check_definitions(style: str, reading: _Reading, words: Words) -> list[Verdict]:
    """Each definition against the problem's English (``{A}x = x is red`` holds when ``{A}{c}`` reads
    "<meaning of {c}> is red"), and for Struct and Filter whether every symbol written is defined."""
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
        consts, unary, props = symbols_of(written)
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
    sentences use a neutral template vocabulary (FLD and ProntoQA judged alike)."""
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
    """A template vocabulary naming every symbol of ``formulas`` (its words only carry the formulas through
    the judge)."""
    consts, unary, props = symbols_of(formulas)
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
