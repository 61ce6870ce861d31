"""Judging one proof step: valid? atomic? (paper §3.2, Table 3; prompts in the paper's Figures 13–14).

Every judge has the verbs of :class:`Judge`; a step carries its premise texts (:mod:`finelogic.eval.steps`), so
the problem is all the context a judge needs. :class:`LLMJudge` is the paper's; :class:`SymbolicJudge` needs no
model; :class:`HybridJudge` is symbolic where it decides, the LLM for the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, MutableMapping, Protocol, Sequence

from finelogic.data.generators.nl import SentenceParseError, parse_sentence
from finelogic.data.problem import Problem
from finelogic.eval.steps import (HYPOTHESIS, NEGATED_HYPOTHESIS, UNKNOWN_TEXT, Step, problem_reference,
                                  template_vocabulary)
from finelogic.logic import (Discharged, FormulaSyntaxError, ProverError, entails, matches_rule, negate, parse_formula,
                             premise_formulas)
from finelogic.memo import memo_key
from finelogic.models.base import Backend, GenerationConfig

#: The paper's validity prompt (Figure 13), verbatim; one user message.
VALIDITY_PROMPT = ("Premises:\n{premises}\nConclusion:\n{conclusion}\n"
                   "Do the premises entail the conclusion? Answer true or false only.")
#: The paper's atomicity prompt (Figure 14), verbatim; asked only when the step is valid.
ATOMICITY_PROMPT = ("Premises:\n{premises}\nConclusion:\n{conclusion}\n"
                    "Is this inference atomic? Answer true or false only.")

SYMBOLIC, LLM = "symbolic", "llm"


@dataclass(frozen=True)
class Verdict:
    """A judge's answer about one step; ``valid`` None when the judge could not decide."""

    valid: bool | None
    atomic: bool | None  # one minimal inference; False whenever valid is False, None whenever it is None
    reason: str = ""  # the matched rule, the parse error, the judge's raw reply
    decided_by: str = ""  # symbolic or llm; empty when undecided

    @property
    def decided(self) -> bool:
        return self.valid is not None


def undecided(reason: str) -> Verdict:
    return Verdict(None, None, reason)


class Judge(Protocol):
    """``judge`` one step, ``judge_all`` many ``(step, problem)`` pairs (one response's steps, or many responses')."""

    def judge_all(self, pairs: Sequence[tuple[Step, Problem]]) -> list[Verdict]: ...

    def judge(self, step: Step, problem: Problem) -> Verdict:
        return self.judge_all([(step, problem)])[0]


def not_judged(step: Step) -> Verdict | None:
    """The verdict for a step no judge looks at (unparsed, opening an assumption); None for the rest."""
    if not step.parsed:
        return undecided(f"not in FLD step notation ({step.note})")
    if step.opens_assumption:
        return undecided("opens an assumption: no inference to judge (skipped)")
    return None


# --- The paper's LLM judge


def step_lines(step: Step, problem: Problem) -> tuple[str, str] | None:
    """The ``premises`` and ``conclusion`` placeholders of the judge prompts (``fact3: <text>`` lines), or
    None when a text is missing; a step read the released way always has them (``???`` when unknown)."""
    if step.released:
        premises = "\n".join(f"{pid}: {text}" for pid, text in zip(step.premises, step.premise_texts))
        return premises, f"{step.conclusion_id}: {step.conclusion_text}" if step.conclusion_id else UNKNOWN_TEXT
    if any(t is None for t in step.premise_texts):
        return None
    premises = "\n".join(f"{pid}: {text}" for pid, text in zip(step.premise_ids, step.premise_texts))
    conclusion = problem_reference(problem)[step.conclusion_id] if step.concludes_hypothesis else step.conclusion_text
    return None if conclusion is None else (premises, f"{step.conclusion_id}: {conclusion}")


def parse_reply(reply: str, *, released: bool = False) -> bool | None:
    """True for a reply starting with true/yes/1, False for false/no/0 (after spaces, quotes, ``*``), else
    None. ``released=True`` reads it as the released code does: only whitespace stripped (``**true**`` is no
    yes), anything else False."""
    text = reply.strip().lower() if released else reply.strip().lstrip("*\"'`_ ").lower()
    if text.startswith(("true", "yes", "1")):
        return True
    if text.startswith(("false", "no", "0")):
        return False
    return False if released else None


class LLMJudge(Judge):
    """The paper's judge over any backend: its two prompts verbatim (atomicity asked only when valid, so atomic ⊆
    valid), greedy decoding; a reply it cannot read is undecided, where the released code retried and finally
    counted False. Steps read the released way get the released prompt text and reply reading. The paper used
    GPT-4.1-mini (98% accuracy on 200 annotated steps); a 135M model is *not* a reliable judge."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.config = GenerationConfig(temperature=0, max_new_tokens=5)  # room for true/false

    def judge_all(self, pairs: Sequence[tuple[Step, Problem]]) -> list[Verdict]:
        """All validity prompts in one ``generate`` call, then the atomicity prompts of the valid steps."""
        verdicts: list[Verdict | None] = [None] * len(pairs)
        asked: list[tuple[int, str, str]] = []
        for i, (step, problem) in enumerate(pairs):
            skip = not_judged(step)
            lines = None if skip else step_lines(step, problem)
            if skip is not None:
                verdicts[i] = skip
            elif lines is None:
                verdicts[i] = undecided("a premise or the conclusion has no text to show the judge")
            else:
                asked.append((i, *lines))
        replies = self._ask([VALIDITY_PROMPT.format(premises=p, conclusion=c) for _, p, c in asked])
        valid_ones = []
        for (i, premises, conclusion), reply in zip(asked, replies):
            valid = parse_reply(reply, released=pairs[i][0].released)
            if valid is None:
                verdicts[i] = undecided(f"validity reply not true/false: {reply.strip()[:60]!r}")
            elif not valid:
                verdicts[i] = Verdict(False, False, f"judge replied {reply.strip()[:20]!r}", LLM)
            else:
                valid_ones.append((i, premises, conclusion, reply))
        replies = self._ask([ATOMICITY_PROMPT.format(premises=p, conclusion=c) for _, p, c, _ in valid_ones])
        for (i, _, _, first), reply in zip(valid_ones, replies):
            atomic = parse_reply(reply, released=pairs[i][0].released)
            reason = f"validity {first.strip()[:20]!r}, atomicity {reply.strip()[:20]!r}"
            if atomic is None:
                reason = "atomicity reply not true/false: " + reason
            verdicts[i] = Verdict(True, atomic, reason, LLM)
        return verdicts  # type: ignore[return-value]

    def _ask(self, prompts: list[str]) -> list[str]:
        """The replies to ``prompts``, each distinct prompt sent once (steps recur across responses)."""
        if not prompts:
            return []
        distinct = list(dict.fromkeys(prompts))
        replies = self.backend.generate([[{"role": "user", "content": p}] for p in distinct], self.config)
        reply = dict(zip(distinct, replies))
        return [reply[p] for p in prompts]


# --- The symbolic judge


def verdict_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a kept verdict ``[valid, atomic, reason, decided_by]`` (None: nothing):
    the check of the ``symbolic-verdicts`` memo."""
    if type(value) is not list or len(value) != 4:
        return f"a verdict must be [valid, atomic, reason, decided_by], not {str(value)[:60]}"
    valid, atomic, reason, decided_by = value
    if any(v is not None and type(v) is not bool for v in (valid, atomic)):
        return f"'valid' and 'atomic' must be true, false or null, not {valid!r}, {atomic!r}"
    if (valid is None and atomic is not None) or (valid is False and atomic is not False):
        return f"'atomic' {atomic!r} cannot go with 'valid' {valid!r}"
    if type(reason) is not str or type(decided_by) is not str:
        return "'reason' and 'decided_by' must be strings"
    return None


class SymbolicJudge(Judge):
    """Exact validity (z3 entailment) and atomicity (one deduction rule) for problems in the template grammar: facts
    from ``problem.formulas``, other statements parsed back from their sentences; a step it cannot read is
    undecided, never guessed. ``memo`` keeps each verdict z3 reached under everything it reads; ``computed``
    counts the verdicts worked out rather than read back.
    """

    def __init__(self, memo: MutableMapping[str, Any] | None = None) -> None:
        self.memo = memo
        self.computed = 0
        self._problems: dict[int, tuple[Problem, str]] = {}  # id(problem) -> (problem, its key part)
        self._seen: dict[tuple, Verdict] = {}  # a step met again in this run skips the key's digest

    def judge(self, step: Step, problem: Problem) -> Verdict:
        skip = not_judged(step)
        if skip is not None:
            return skip
        if self.memo is None:
            return self._judge(step, problem)
        known = self._problems.get(id(problem))  # problem_key worked out once per problem object
        if known is None or known[0] is not problem:
            known = self._problems[id(problem)] = (problem, problem_key(problem))
        read = (known[1], step.premises, step.premise_texts, step.conclusion_id,
                step.conclusion_text, step.parsed, step.released)
        verdict = self._seen.get(read)
        if verdict is not None:
            return verdict
        key = memo_key(["symbolic-verdict", *read])
        kept = self.memo.get(key)
        if kept is not None:
            verdict = self._seen[read] = Verdict(*kept)
            return verdict
        verdict = self._judge(step, problem)
        if not verdict.reason.startswith(_PROVER_FAILED):
            self.memo[key] = [verdict.valid, verdict.atomic, verdict.reason, verdict.decided_by]
            self._seen[read] = verdict
        return verdict

    def _judge(self, step: Step, problem: Problem) -> Verdict:
        self.computed += 1
        vocabulary = template_vocabulary(problem)
        if vocabulary is None or HYPOTHESIS not in problem.formulas:
            return undecided("the problem has no formulas in the template grammar (no symbolic check)")
        if step.released and UNKNOWN_TEXT in (*step.premise_texts, step.conclusion_text):
            return undecided("the released reference has no text (???) for a premise or the conclusion")
        try:
            premises = [self._premise(pid, text, problem, vocabulary, discharged=p.startswith("["),
                                      released=step.released)
                        for p, pid, text in zip(step.premises, step.premise_ids, step.premise_texts)]
            conclusion = self._conclusion(step, problem, vocabulary)
        except _Undecidable as why:
            return undecided(str(why))
        try:
            valid = entails(premise_formulas(premises), conclusion)
        except ProverError as error:
            return undecided(f"{_PROVER_FAILED}: {error}")
        if not valid:
            return Verdict(False, False, "not entailed: premises ∧ ¬conclusion is satisfiable (z3)", SYMBOLIC)
        rules = matches_rule(premises, conclusion)
        if rules:
            return Verdict(True, True, f"entailed (z3); one rule: {rules[0]}", SYMBOLIC)
        return Verdict(True, False, "entailed (z3), but no single deduction rule derives it", SYMBOLIC)

    def judge_all(self, pairs: Sequence[tuple[Step, Problem]]) -> list[Verdict]:
        return [self.judge(s, p) for s, p in pairs]

    @staticmethod
    def _premise(pid: str, text: str | None, problem: Problem, vocabulary, *, discharged: bool,
                 released: bool = False):
        if released and not _problems_own_sentence(pid, text, problem):
            formula = _sentence(text, vocabulary, pid)  # the released judge reads the response's text
        elif pid.startswith("fact"):
            if pid not in problem.formulas:
                raise _Undecidable(f"unknown premise id {pid!r}")
            formula = _formula(problem.formulas[pid], pid)
        elif text is None:
            raise _Undecidable(f"premise {pid!r} is not defined before this step")
        else:
            formula = _sentence(text, vocabulary, pid)
        return Discharged(formula) if discharged else formula

    @staticmethod
    def _conclusion(step: Step, problem: Problem, vocabulary):
        if step.released and not _problems_own_sentence(step.conclusion_id, step.conclusion_text, problem):
            return _sentence(step.conclusion_text, vocabulary, step.conclusion_id)
        if step.conclusion_id in (HYPOTHESIS, NEGATED_HYPOTHESIS):
            hypothesis = _formula(problem.formulas[HYPOTHESIS], HYPOTHESIS)
            return hypothesis if step.conclusion_id == HYPOTHESIS else negate(hypothesis)
        if step.conclusion_text is None:
            raise _Undecidable(f"{step.conclusion_id} has no text")
        return _sentence(step.conclusion_text, vocabulary, step.conclusion_id)


_PROVER_FAILED = "z3 could not decide"


def problem_key(problem: Problem) -> str:
    """A digest of what the symbolic judge reads of a problem: facts, hypothesis, formulas, vocabulary."""
    return memo_key([[[f.id, f.text] for f in problem.facts], problem.hypothesis, dict(problem.formulas),
                     problem.meta.get("vocabulary")])


def _problems_own_sentence(pid: str, text: str, problem: Problem) -> bool:
    """``text`` is the problem's sentence for fact or hypothesis ``pid`` (case and final period aside), so its
    formula is known."""
    own = problem.hypothesis if pid == HYPOTHESIS else next((f.text for f in problem.facts if f.id == pid), None)
    return own is not None and own.strip().rstrip(".").lower() == text.strip().rstrip(".").lower()


class _Undecidable(Exception):
    """The symbolic judge cannot read this step; the message says why."""


def _formula(text: str, what: str):
    try:
        return parse_formula(text)
    except FormulaSyntaxError as error:
        raise _Undecidable(f"{what}: formula does not parse ({error})") from error


def _sentence(text: str, vocabulary, what: str):
    """A statement written as an English sentence, or as a formula (``{A}{a}``, the symbolic styles)."""
    if "{" in text:
        return _formula(text, what)
    try:
        return parse_sentence(text, vocabulary)
    except SentenceParseError as error:
        raise _Undecidable(f"{what}: sentence outside the template grammar ({error})") from error


# --- Symbolic first, the LLM for the rest


class HybridJudge(Judge):
    """:class:`SymbolicJudge` where it decides; the LLM judge (batched) for the steps it cannot read."""

    def __init__(self, symbolic: SymbolicJudge, llm: LLMJudge) -> None:
        self.symbolic = symbolic
        self.llm = llm

    def judge_all(self, pairs: Sequence[tuple[Step, Problem]]) -> list[Verdict]:
        verdicts = self.symbolic.judge_all(pairs)
        todo = [i for i, v in enumerate(verdicts) if not v.decided and not_judged(pairs[i][0]) is None]
        for i, verdict in zip(todo, self.llm.judge_all([pairs[i] for i in todo])):
            why = f"symbolic: {verdicts[i].reason}; llm: {verdict.reason}"
            verdicts[i] = replace(verdict, reason=why)
        return verdicts
