"""FLD v0.2 and FLDx2 records (``book/data-formats.md``, "FLD"): ``fld/*.json`` or ``fld/*.jsonl``."""
from __future__ import annotations

import re
from typing import Any, Mapping

from finelogic.data.loaders.records import FLD_LABELS, Format, Item, bad, label, missing, required
from finelogic.data.problem import Fact, Problem

_FLD_ID = re.compile(r"(?:^|(?<=\s))((?:sent|fact)\d+):\s*")
_FLD_REF = re.compile(r"\b(?:sent|fact)\d+\b")
_PROOF_DEFINITION = re.compile(r"->\s*((?:int|assump)\d+)\s*:\s*(.+?)\s*$")


def _numbered(value: Any, name: str) -> list[tuple[str, str]]:
    """``"sent1: a. sent2: b."`` (or a list of such strings) -> ``[("sent1", "a."), ("sent2", "b.")]``."""
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    if not isinstance(value, str):
        raise bad(name, f"expected a string 'sent1: ... sent2: ...', got {type(value).__name__}")
    parts = _FLD_ID.split(value.strip())
    if parts[0].strip():
        raise bad(name, f"expected 'sent1: ... sent2: ...', found text before the first id: {parts[0]!r:.60}")
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts), 2)]


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return value[0] if value else None
    return value or None


def fld_problem(record: Mapping[str, Any], *, problem_id: str, meta: Mapping[str, Any] | None = None) -> Problem:
    """One FLD v0.2 or FLDx2 record -> Problem (``book/data-formats.md``, "FLD"): ``sent1: ...`` become
    ``fact1, ...`` in order, renamed inside the proof too (``meta["original_ids"]``); the proof is ``proofs[0]``
    (FLDx2: ``steps``); formulas include ``proofs_formula[0]``'s ``intN``/``assumpN`` definitions."""
    hypothesis = required(record, "hypothesis")
    context_field = "context" if "context" in record else "facts"
    if record.get(context_field) is None:
        raise missing("context")
    numbered = _numbered(record[context_field], context_field)
    id_map = {old: f"fact{i}" for i, (old, _) in enumerate(numbered, start=1)}
    label_field = "world_assump_label" if record.get("world_assump_label") is not None else "proof_label"
    if record.get(label_field) is None:
        raise missing("world_assump_label")
    verdict = label(record[label_field], label_field, FLD_LABELS)
    depth = record.get("depth")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool)):
        raise bad("depth", f"expected int or null, got {depth!r}")
    proof = _first(record.get("proofs"))
    steps = record.get("steps")
    if proof is None and steps and isinstance(steps, (str, list)):  # an int ``steps`` is a count, not a proof
        proof = steps if isinstance(steps, str) else "; ".join(s.strip().rstrip(";") for s in steps) + ";"
    formulas: dict[str, str] = {}
    formula_field = "context_formula" if "context_formula" in record else "facts_formula"
    if record.get(formula_field):
        for old, formula in _numbered(record[formula_field], formula_field):
            if old in id_map:
                formulas[id_map[old]] = formula
    if record.get("hypothesis_formula"):
        formulas["hypothesis"] = record["hypothesis_formula"]
    proof_formula = _first(record.get("proofs_formula"))
    if proof_formula:
        for step in proof_formula.split(";"):
            match = _PROOF_DEFINITION.search(step)
            if match:
                formulas[match.group(1)] = match.group(2)
    if proof:  # the original ids renamed
        proof = _FLD_REF.sub(lambda m: id_map.get(m.group(0), m.group(0)), proof)
    consumed = {"hypothesis", context_field, "proofs", "steps", formula_field, "hypothesis_formula",
                "proofs_formula", label_field, "depth", "id"}
    return Problem(
        id=problem_id,
        dataset="fld",
        facts=tuple(Fact(id_map[old], text) for old, text in numbered),
        hypothesis=hypothesis,
        label=verdict,
        depth=depth,
        proof=proof or None,
        formulas=formulas,
        meta={**(meta or {}), "original_ids": [old for old, _ in numbered],
              "original": {k: v for k, v in record.items() if k not in consumed}},
    )


def convert(item: Item) -> Problem:
    record = item.data
    problem_id = str(record.get("id", f"{item.stem}_{item.index}"))
    variant = "FLDx2" if "facts" in record and "context" not in record else "FLD v0.2"
    return fld_problem(record, problem_id=problem_id, meta={"source": item.location, "format": variant})


FORMAT = Format(convert, "fld/*.json or fld/*.jsonl (FLD v0.2 or FLDx2 records, e.g. fld/test.jsonl)")
