"""The paper's merged evaluation JSON (the authors' ``data/eval/*.json``): ``paper_eval/*.json``."""
from __future__ import annotations

import re
from typing import Any, Mapping

from finelogic.data.loaders.fld import fld_problem
from finelogic.data.loaders.prontoqa import explanation_depth, prontoqa_proof
from finelogic.data.loaders.records import FLD_LABELS, YES_NO, Format, Item, ItemError, bad, label, required
from finelogic.data.problem import Fact, Problem

PAPER_LABELS = {**FLD_LABELS, **YES_NO}
_INPUT_FACT = re.compile(r"\b[Ff]act(\d+)\s*:\s*")
_INPUT_HYPOTHESIS = re.compile(r"^\s*(?:Hypothesis|Question)\s*:\s*(.*)$", re.M | re.I)


def infer_paper_dataset(record: Mapping[str, Any]) -> str:
    """Which benchmark a merged-JSON item came from, by its dataset-specific fields (datasets.md):
    ``original_data`` -> fld; ``Premise``/``Conclusion``/``Label`` -> folio; ``explanation`` or
    ``options`` -> prontoqa; ``context`` + ``question`` + ``answer`` -> multi_logieval."""
    if "original_data" in record:
        return "fld"
    if {"Premise", "Conclusion", "Label"} & record.keys():
        return "folio"
    if "explanation" in record or "options" in record:
        return "prontoqa"
    if {"context", "question", "answer"} <= record.keys():
        return "multi_logieval"
    raise ItemError(f"cannot infer the dataset from fields {sorted(record)}")


def convert(item: Item) -> Problem:
    """Facts (``Fact1: ...``) and the ``Hypothesis:``/``Question:`` line are parsed from ``input`` (what
    the model saw); label from ``proof_label`` (``__YES__``/``__NO__`` -> PROVED/DISPROVED). FLD items add
    depth, proof and formulas from ``original_data``; ProntoQA items depth and proof from ``explanation``."""
    record = item.data
    text = required(record, "input")
    verdict = label(required(record, "proof_label"), "proof_label", PAPER_LABELS)
    dataset = infer_paper_dataset(record)
    hypothesis_match = _INPUT_HYPOTHESIS.search(text)
    if not hypothesis_match:
        raise bad("input", "no 'Hypothesis:' or 'Question:' line")
    parts = _INPUT_FACT.split(text[: hypothesis_match.start()])
    facts = tuple(Fact(f"fact{parts[i]}", parts[i + 1].strip()) for i in range(1, len(parts), 2))
    if not facts:
        raise bad("input", "no 'Fact1: ...' lines before the hypothesis")
    problem_id = str(record.get("id", f"{dataset}_{item.index}"))
    depth, proof, formulas = record.get("depth"), None, {}
    original = {k: v for k, v in record.items() if k not in ("input", "proof_label")}
    if dataset == "fld":
        if not isinstance(record["original_data"], Mapping):
            raise bad("original_data", "expected an object with the FLD fields")
        try:
            fld = fld_problem(record["original_data"], problem_id=problem_id)
        except ItemError as error:
            raise ItemError(f"original_data: {error.reason}") from None
        depth, proof, formulas = fld.depth, fld.proof, fld.formulas
    elif dataset == "prontoqa" and isinstance(record.get("explanation"), list):
        explanation = record["explanation"]
        depth = explanation_depth(explanation)
        proof = prontoqa_proof(explanation, facts, verdict)
    return Problem(
        id=problem_id, dataset=dataset, facts=facts, hypothesis=hypothesis_match.group(1).strip(),
        label=verdict, depth=depth, proof=proof, formulas=formulas,
        meta={"source": item.location, "paper_eval": True, "original": original},
    )


FORMAT = Format(convert=convert, where="paper_eval/*.json (the authors' merged evaluation JSON)")
