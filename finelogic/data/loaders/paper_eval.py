"""The paper's merged evaluation JSON (the authors' ``data/eval/*.json``): ``paper_eval/*.json``."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from finelogic.data.loaders.fld import fld_problem
from finelogic.data.loaders.prontoqa import check_answer, explanation_depth, prontoqa_proof, unmatched_sentences
from finelogic.data.loaders.records import (FLD_LABELS, YES_NO, Format, Item, ItemError, bad, label, read_items,
                                           required)
from finelogic.data.problem import UNKNOWN, Fact, Problem

PAPER_LABELS = {**FLD_LABELS, **YES_NO}
# ``Fact1:`` (FLD, FOLIO, ProntoQA), ``Fact 1:`` (Multi-LogiEval); any case.
_INPUT_FACT = re.compile(r"\bfact\s*(\d+)\s*:[ \t]*", re.I)
_INPUT_HYPOTHESIS = re.compile(r"^\s*(?:Hypothesis|Question)\s*:\s*(.*)$", re.M | re.I)


def infer_paper_dataset(record: Mapping[str, Any]) -> str:
    """Which benchmark a merged-JSON item came from (``book/data-formats.md``, "The paper's merged evaluation JSON")."""
    if "original_data" in record:
        return "fld"
    if {"Premise", "Conclusion", "Label"} & record.keys():
        return "folio"
    if "explanation" in record or "options" in record:
        return "prontoqa"
    if {"context", "question", "answer"} <= record.keys():
        return "multi_logieval"
    raise ItemError(f"cannot infer the dataset from fields {sorted(record)}")


def input_facts(text: str) -> tuple[Fact, ...]:
    """The ``FactN: <text>`` lines of an ``input`` as facts ``factN``; empty ones at the end are dropped (the
    released ProntoQA file ends every list with an empty ``Fact19:``), an empty one between others is an error."""
    parts = _INPUT_FACT.split(text)
    facts = [Fact(f"fact{int(parts[i])}", parts[i + 1].strip()) for i in range(1, len(parts), 2)]
    while facts and not facts[-1].text:
        facts.pop()
    empty = [f.id for f in facts if not f.text]
    if empty:
        raise bad("input", f"empty fact(s) {', '.join(empty)} between other facts")
    return tuple(facts)


def read(path: Path) -> list[Item]:
    """The file's items in order; where two of them share an ``id`` (the Multi-LogiEval file joins 25 rule files,
    each numbered from 1), every item of the file is known by its position, as the released code reads it."""
    items = read_items(path)
    ids = [str(item.data["id"]) for item in items if isinstance(item.data, Mapping) and "id" in item.data]
    if len(set(ids)) == len(ids):
        return items
    return [replace(item, positional=True) for item in items]


def convert(item: Item) -> Problem:
    """Facts and the ``Hypothesis:``/``Question:`` line parsed from ``input`` (what the model saw), the label
    from ``proof_label``; FLD items add ``original_data``'s proof, formulas and depth, ProntoQA items the gold
    proof and depth of ``explanation`` (an explanation citing a sentence none of the facts is an error)."""
    record = item.data
    text = required(record, "input")
    verdict = label(required(record, "proof_label"), "proof_label", PAPER_LABELS)
    dataset = infer_paper_dataset(record)
    hypothesis_match = _INPUT_HYPOTHESIS.search(text)
    if not hypothesis_match:
        raise bad("input", "no 'Hypothesis:' or 'Question:' line")
    facts = input_facts(text[: hypothesis_match.start()])
    if not facts:
        raise bad("input", "no 'Fact1: ...' lines before the hypothesis")
    # ``<dataset>_<position>`` without an id or where the file repeats ids; the record's own id stays in
    # ``meta["original"]``
    problem_id = f"{dataset}_{item.index}" if item.positional or "id" not in record else str(record["id"])
    depth, proof, formulas = record.get("depth"), None, {}
    original = {k: v for k, v in record.items() if k not in ("input", "proof_label")}
    if dataset == "fld":
        if not isinstance(record["original_data"], Mapping):
            raise bad("original_data", "expected an object with the FLD fields")
        try:
            fld = fld_problem(record["original_data"], problem_id=problem_id)
        except ItemError as error:
            raise ItemError(f"original_data: {error}") from None
        proof, formulas = fld.proof, fld.formulas
        steps = record["original_data"].get("steps")  # the depth the released Table 5 script buckets by
        if verdict == UNKNOWN:
            depth = None
        elif isinstance(steps, str) and steps.strip().isdigit():
            depth = int(steps)
        else:  # FLDx2's ``steps`` is a proof: its record's ``depth``
            depth = steps if isinstance(steps, int) and not isinstance(steps, bool) else fld.depth
    elif dataset == "prontoqa" and isinstance(record.get("explanation"), list):
        explanation = record["explanation"]
        check_answer(explanation, hypothesis_match.group(1), verdict)
        depth = explanation_depth(explanation)
        proof = prontoqa_proof(explanation, facts, verdict)
        if proof is None:
            unmatched = unmatched_sentences(explanation, facts)
            raise bad("explanation", f"no gold proof: {len(explanation)} sentences; not among the facts: "
                                     f"{unmatched[:3]!r}" if unmatched else
                                     f"no gold proof from {len(explanation)} sentences (expected fact, rule, "
                                     "derived, ..., an odd number of at least 3)")
    return Problem(
        id=problem_id, dataset=dataset, facts=facts, hypothesis=hypothesis_match.group(1).strip(),
        label=verdict, depth=depth, proof=proof, formulas=formulas,
        # The input text as the model saw it: the released prompt layout sends it unchanged.
        meta={"source": item.location, "paper_eval": True, "input": text, "original": original},
    )


# The released files (YujunZhou/Logical data/eval/); the FLD file is not in the public snapshot.
PAPER_FILES = {"DataSet2-FOLIO.json": 203, "Dataset3-Multi-LogiEval.json": 390, "Dataset4-ProntoQA.json": 500}

FORMAT = Format(convert=convert, where="paper_eval/*.json (the authors' merged evaluation JSON)", read=read,
                counts=PAPER_FILES)
