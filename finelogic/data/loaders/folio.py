"""FOLIO: v0.0 (``premises`` list), v2 (newline-separated premises) or the Logic-LM copy (context/question/answer)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from finelogic.data.loaders.records import (FOLIO_LABELS, Format, Item, bad, data_file, label, numbered_facts,
                                           required, split_sentences)
from finelogic.data.problem import Problem

FOLIO_QUESTION_PREFIX = re.compile(r"^.*?is the following statement true, false, or uncertain\?\s*", re.I)


def convert(item: Item) -> Problem:
    """A FOLIO record of any of the three versions; its own FOL annotations stay in ``meta["fol"]``."""
    record = item.data
    stem = item.stem
    if "context" in record and "premises" not in record:  # Logic-LM copy
        context = required(record, "context")
        question = required(record, "question")
        answer = str(required(record, "answer")).strip()
        options = record.get("options") or ["A) True", "B) False", "C) Uncertain"]
        by_letter = {o.split(")")[0].strip(): o.split(")", 1)[-1].strip() for o in options}
        if answer not in by_letter:
            raise bad("answer", f"{answer!r} is not one of the options {sorted(by_letter)}")
        return Problem(
            id=str(record.get("id", f"{stem}_{item.index}")),
            dataset="folio",
            facts=numbered_facts(split_sentences(context)),
            hypothesis=FOLIO_QUESTION_PREFIX.sub("", question).strip(),
            label=label(by_letter[answer], "answer", FOLIO_LABELS),
            meta={"source": item.location, "format": "Logic-LM", "question": question},
        )
    premises = required(record, "premises", (list, str))
    conclusion = required(record, "conclusion")
    verdict = label(required(record, "label", (str, bool)), "label", FOLIO_LABELS)
    variant = "v2" if isinstance(premises, str) else "v0.0"
    texts = premises.splitlines() if isinstance(premises, str) else premises
    if not all(isinstance(t, str) for t in texts):
        raise bad("premises", "expected a list of strings")
    problem_id = record.get("example_id", record.get("id", f"{stem}_{item.index}"))
    meta: dict[str, Any] = {"source": item.location, "format": variant}
    if "story_id" in record:
        meta["story_id"] = record["story_id"]
    if "premises-FOL" in record or "conclusion-FOL" in record:
        fol = record.get("premises-FOL")
        meta["fol"] = {"premises": fol.splitlines() if isinstance(fol, str) else fol,
                       "conclusion": record.get("conclusion-FOL")}
    return Problem(id=str(problem_id), dataset="folio", facts=numbered_facts(t for t in texts if t.strip()),
                   hypothesis=conclusion.strip(), label=verdict, meta=meta)


def find(folder: Path, split: str | None) -> list[Path]:
    """The first of ``folio_v2_<split>.jsonl``, ``folio-<split>.jsonl``, ``folio_<split>.jsonl`` (and for
    validation/dev the Logic-LM ``Logic-LLM_data_FOLIO/dev.json``) that exists, checked by
    :func:`~finelogic.data.loaders.records.data_file`."""
    split = split or "validation"
    candidates = [f"folio_v2_{split}.jsonl", f"folio-{split}.jsonl", f"folio_{split}.jsonl"]
    if split in ("validation", "dev"):
        candidates.append("Logic-LLM_data_FOLIO/dev.json")
    for candidate in candidates:
        if os.path.lexists(folder / candidate):  # the first one there must be a file: never fall back to the next
            return [data_file(folder / candidate)]
    return []


FORMAT = Format(
    convert=convert,
    where="folio/folio-validation.jsonl (FOLIO v0.0), folio/folio_v2_validation.jsonl (v2) "
          "or folio/Logic-LLM_data_FOLIO/dev.json (Logic-LM)",
    find=find,
    counts={"folio-validation.jsonl": 204, "folio_v2_validation.jsonl": 203, "Logic-LLM_data_FOLIO/dev.json": 204},
)
