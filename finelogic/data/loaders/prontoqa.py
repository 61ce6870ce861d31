"""ProntoQA, Logic-LM's 500-item 5-hop dev set: ``prontoqa/dev.json``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from finelogic.data.loaders.records import (Format, Item, bad, data_file, label, numbered_facts, required,
                                           split_sentences)
from finelogic.data.problem import DISPROVED, PROVED, Fact, Problem

PRONTOQA_QUESTION_PREFIX = "Is the following statement true or false?"


def explanation_depth(explanation: Sequence[str]) -> int | None:
    """Rule applications in an explanation chain (fact, rule, derived, ...); None for an even length."""
    return (len(explanation) - 1) // 2 if len(explanation) % 2 == 1 else None


def prontoqa_proof(explanation: Sequence[str], facts: Sequence[Fact], verdict: str) -> str | None:
    """The explanation chain in FLD notation; None for a chain of even length or under 3, or one citing a
    sentence that is none of the facts (compared without the final period, which the paper's file drops)."""
    from finelogic.data.generators.prontoqa import chain_proof

    ids = {}
    for fact in facts:
        ids.setdefault(_unpunctuated(fact.text), fact.id)
    if len(explanation) < 3 or len(explanation) % 2 == 0:
        return None
    used = [_unpunctuated(s) for s in (explanation[0], *explanation[1::2])]
    if any(s not in ids for s in used):
        return None
    return chain_proof(ids[used[0]], [ids[s] for s in used[1:]],
                       list(explanation[2::2])[:-1], negated=verdict == DISPROVED)


def check_answer(explanation: Sequence[str], hypothesis: str, verdict: str) -> None:
    """An error unless the explanation concludes the statement itself (PROVED) or something else (DISPROVED)."""
    concludes = _unpunctuated(explanation[-1]) == _unpunctuated(hypothesis)
    if concludes != (verdict == PROVED):
        raise bad("answer", f"{verdict} disagrees with the explanation, which concludes {explanation[-1]!r} "
                            f"for the statement {hypothesis!r}")


def unmatched_sentences(explanation: Sequence[str], facts: Sequence[Fact]) -> list[str]:
    """The explanation's premise sentences (its first, then every second) that are none of the facts."""
    texts = {_unpunctuated(f.text) for f in facts}
    return [s for s in (explanation[:1] + list(explanation[1::2])) if _unpunctuated(s) not in texts]


def _unpunctuated(text: str) -> str:
    return text.strip().removesuffix(".").strip()


def convert(item: Item) -> Problem:
    """Context sentences -> facts, question less its prefix -> hypothesis, answer A/B -> PROVED/DISPROVED;
    ``explanation`` gives the gold proof and the depth (5 for every item of the Logic-LM set)."""
    record = item.data
    context, question = required(record, "context"), required(record, "question")
    answer = str(required(record, "answer")).strip()
    verdict = label(answer, "answer", {"a": PROVED, "b": DISPROVED, "true": PROVED, "false": DISPROVED})
    explanation = record.get("explanation")
    if explanation is not None and not (isinstance(explanation, list)
                                        and all(isinstance(s, str) for s in explanation)):
        raise bad("explanation", "expected a list of sentences")
    facts = numbered_facts(split_sentences(context))
    hypothesis = question.strip().removeprefix(PRONTOQA_QUESTION_PREFIX).strip()
    if explanation:
        check_answer(explanation, hypothesis, verdict)
    return Problem(
        id=str(record.get("id", f"{item.stem}_{item.index}")),
        dataset="prontoqa",
        facts=facts,
        hypothesis=hypothesis,
        label=verdict,
        depth=explanation_depth(explanation) if explanation else None,
        proof=prontoqa_proof(explanation, facts, verdict) if explanation else None,
        meta={"source": item.location, "explanation": explanation, "options": record.get("options")},
    )


def find(folder: Path, split: str | None) -> list[Path]:
    file = folder / f"{split or 'dev'}.json"
    return [data_file(file)] if os.path.lexists(file) else []  # present but not a file: an error, not a stand-in


FORMAT = Format(convert=convert, where="prontoqa/dev.json (Logic-LM's 500-item 5-hop set)", find=find,
                counts={"prontoqa/dev.json": 500})
