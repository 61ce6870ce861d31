"""What every inference-time baseline shares (paper §5.1, Appendix A.2): batched rounds of prompts, per-item
traces, accuracy records (:data:`finelogic.eval.accuracy.RECORD_COLUMNS`, ``setting`` as Table 2 prints it).

Every baseline takes ``problems`` (labelled), ``backend``, ``config`` (decoding; default ``GenerationConfig()``)
and ``model`` (the ``model`` column; default the backend's name), then its own options.
"""
from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.eval.accuracy import accuracy_record, model_name_of, records_frame, token_counts
from finelogic.logic import Formula, entails, format_formula, matches_rule, negate, parse_formula
from finelogic.logic.proof import HYPOTHESIS, NEGATED_HYPOTHESIS, ProofStep, parse_proof_steps
from finelogic.models.base import Backend, Conversation, GenerationConfig
from finelogic.prompts import default_few_shot_examples, labels_for

log = logging.getLogger(__name__)

#: The baselines' setting names as the paper's Table 2 prints them.
SEL_INF, LOGIC_LM, SYMBCOT = "Sel-Inf", "Logic-LM", "SymbCoT"
BASELINE_SETTINGS = (SEL_INF, LOGIC_LM, SYMBCOT)


def worked_examples(problem: Problem, shot: Callable[[Problem], str | Sequence[str]], lead: str, *,
                    with_unknown: bool = True) -> str:
    """``Example k:\n<shot>`` blocks, then ``lead``, for ``shot(e)`` (one shot or several) of each of
    :func:`finelogic.prompts.default_few_shot_examples` the problem's labels allow; cached, so ``shot`` must be
    a function of the example alone."""
    return _worked_examples(shot, lead, labels_for(problem.dataset), with_unknown)


@functools.lru_cache(maxsize=256)
def _worked_examples(shot: Callable[[Problem], str | Sequence[str]], lead: str, labels: tuple[str, ...],
                     with_unknown: bool) -> str:
    examples = [e for e in default_few_shot_examples(UNKNOWN in labels)
                if e.label in labels and (with_unknown or e.label != UNKNOWN)]
    shots = [shot(e) for e in examples]
    flat = [one for s in shots for one in ([s] if isinstance(s, str) else s)]
    return "".join(f"Example {k}:\n{s}\n\n" for k, s in enumerate(flat, 1)) + lead + "\n"


@dataclass(frozen=True)
class DerivationStep:
    """One gold proof step ``premises -> conclusion`` with the conclusion's ``text`` and ``formula`` and its
    ``rule`` (:data:`finelogic.logic.RULE_NAMES`), each None when unknown."""

    premises: tuple[str, ...]
    conclusion: str
    text: str | None
    formula: str | None
    rule: str | None

    def fld(self, formal: bool = False) -> str:
        """The step in FLD proof notation; ``formal`` writes the conclusion's formula instead of its text."""
        return ProofStep(self.premises, self.conclusion, self.formula if formal else self.text).format()


def formula_table(formulas: Mapping[str, str]) -> dict[str, str]:
    """A problem's ``formulas`` (id -> formula text) with ``¬hypothesis`` added when ``hypothesis`` is known."""
    table = dict(formulas)
    if HYPOTHESIS in table:
        table[NEGATED_HYPOTHESIS] = format_formula(negate(parse_formula(table[HYPOTHESIS])))
    return table


def gold_derivation(problem: Problem) -> list[DerivationStep]:
    """The problem's gold proof as :class:`DerivationStep` s, with formulas and rules where it has formulas."""
    if not problem.proof:
        return []
    return list(_derivation(problem.proof, tuple(sorted(problem.formulas.items()))))


@functools.lru_cache(maxsize=4096)  # the few-shot demonstrations derive the same proofs for every prompt
def _derivation(proof: str, formulas: tuple[tuple[str, str], ...]) -> tuple[DerivationStep, ...]:
    table = formula_table(dict(formulas))
    steps = []
    for step in parse_proof_steps(proof):
        premises = tuple(p.strip() for p in step.premises)
        ids = (*premises, step.conclusion)
        rule = None
        if all(i in table for i in ids):
            rules = matches_rule([parse_formula(table[p]) for p in premises], parse_formula(table[step.conclusion]))
            rule = rules[0] if rules else None
        steps.append(DerivationStep(premises, step.conclusion, step.text, table.get(step.conclusion), rule))
    return tuple(steps)


def prover_label(facts: Sequence[Formula], hypothesis: Formula) -> str:
    """PROVED / DISPROVED / UNKNOWN as z3 finds that ``facts`` entail ``hypothesis``, its negation or neither."""
    if entails(facts, hypothesis):
        return PROVED
    return DISPROVED if entails(facts, negate(hypothesis)) else UNKNOWN


def rule_words(rule: str | None) -> str:
    """``modus_ponens`` -> ``modus ponens``; ``one inference rule`` when unknown."""
    return rule.replace("_", " ") if rule else "one inference rule"


def symbol_legend(problem: Problem) -> str | None:
    """``Symbols: {A} = woolly, {a} = the badger`` from the problem's vocabulary; None without one."""
    raw = problem.meta.get("vocabulary")
    if not isinstance(raw, dict) or not raw:
        return None
    pairs: list[tuple[str, str]] = []
    if set(raw) <= {"predicates", "propositions", "constants"}:
        for group in ("predicates", "propositions", "constants"):
            pairs += [("{" + k + "}", str(v)) for k, v in sorted(raw.get(group, {}).items())]
    else:
        pairs = sorted((str(k), str(v)) for k, v in raw.items())
    return "Symbols: " + ", ".join(f"{k} = {v}" for k, v in pairs) if pairs else None


@dataclass
class ItemTrace:
    """What happened to one problem: every reply (``calls``), baseline-specific results (``data``), sizes."""

    problem: Problem
    calls: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    prompt_chars: int = 0
    completion_chars: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class BaselineResult:
    """What a baseline returns: one accuracy record and one JSON-able trace per problem, in order."""

    records: pd.DataFrame
    traces: tuple[dict[str, Any], ...]


class BaselineSession:
    """One baseline run over ``problems``: batched rounds, traces, and the records at the end."""

    def __init__(self, setting: str, problems: Sequence[Problem], backend: Backend, *,
                 model: str | None = None) -> None:
        unlabelled = [p.id for p in problems if p.label is None]
        if unlabelled:
            raise ValueError(f"baselines need labelled problems; no label on {unlabelled[:5]}")
        for p in problems:  # a dataset without an accuracy prompt
            try:
                labels_for(p.dataset)
            except ValueError as error:
                raise ValueError(f"problem {p.id!r}: {error}") from None
        self.setting = setting
        self.backend = backend
        self.model = model or model_name_of(backend)
        self.items = [ItemTrace(p) for p in problems]
        self.tokenizer = getattr(backend, "tokenizer", None)
        self.rounds = 0

    def ask(self, stage: str, requests: Sequence[tuple[int, Conversation]], config: GenerationConfig) -> list[str]:
        """Send one round of ``(item index, conversation)`` pairs in one ``generate`` call; the replies, also traced."""
        if not requests:
            return []
        started = time.perf_counter()
        replies = self.backend.generate([c for _, c in requests], config)
        if len(replies) != len(requests):
            raise RuntimeError(f"{self.setting} {stage}: backend returned {len(replies)} completions "
                               f"for {len(requests)} conversations")
        self.rounds += 1
        share = (time.perf_counter() - started) / len(requests)
        for (i, conversation), reply in zip(requests, replies):
            item = self.items[i]
            item.calls.append({"stage": stage, "response": reply})
            item.prompt_chars += sum(len(m["content"]) for m in conversation)
            item.completion_chars += len(reply)
            item.seconds += share
            prompt_tokens, completion_tokens = token_counts(self.tokenizer, list(conversation), reply)
            if prompt_tokens is not None:
                item.prompt_tokens = (item.prompt_tokens or 0) + prompt_tokens
            if completion_tokens is not None:
                item.completion_tokens = (item.completion_tokens or 0) + completion_tokens
        return list(replies)

    def finish(self, answers: Sequence[str], responses: Sequence[str] | None = None) -> BaselineResult:
        """The records and traces: the answer is read from ``answers``; ``responses`` (default ``answers``) is
        the ``response`` column the step parser reads."""
        responses = answers if responses is None else responses
        records = []
        for item, answer, response in zip(self.items, answers, responses, strict=True):
            record = accuracy_record(item.problem, [], answer, None, seconds=item.seconds,
                                     setting=self.setting, model=self.model)
            record.update(response=response, prompt_tokens=item.prompt_tokens,
                          completion_tokens=item.completion_tokens, prompt_chars=item.prompt_chars,
                          completion_chars=item.completion_chars)
            records.append(record)
        frame = records_frame(records)
        if records:
            log.info("%s / %s: %d of %d correct, %d rounds", self.model, self.setting, int(frame["correct"].sum()),
                     len(frame), self.rounds)
        return BaselineResult(frame, tuple({"id": item.problem.id, "dataset": item.problem.dataset,
                                            "gold": item.problem.label, "setting": self.setting, "model": self.model,
                                            **item.data, "calls": item.calls} for item in self.items))
