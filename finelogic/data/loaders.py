"""Loaders for the published benchmark files: every format becomes a list of :class:`Problem` records.

Implements the format facts of ``reference/datasets.md`` (FLD v0.2 / FLDx2, FOLIO v0.0 / v2 / Logic-LM,
Multi-LogiEval, ProntoQA's Logic-LM dev set, LogicMark, the paper's merged evaluation JSON).

Where the files come from, in order:

1. ``path`` (a file, a dataset folder such as ``<dir>/folio``, or a root folder in the published layout);
2. ``$FINELOGIC_DATA_DIR`` in the published layout::

       folio/folio-validation.jsonl            (v0.0; or folio_v2_validation.jsonl, Logic-LLM_data_FOLIO/dev.json)
       multi_logieval/data/d{N}_Data/{fol,pl,nm}/<RULES>.json
       prontoqa/dev.json
       fld/*.json | *.jsonl                    (FLD v0.2 or FLDx2 records)
       logicmark/*.json | *.jsonl
       paper_eval/*.json

3. the Hugging Face hub through ``datasets.load_dataset`` (FLD, FOLIO v2, LogicMark), only when neither
   ``HF_HUB_OFFLINE`` nor ``HF_DATASETS_OFFLINE`` is set;
4. otherwise :class:`DataNotFoundError`, which says which files to put where.

Errors. A malformed file or item raises :class:`DatasetFormatError` naming the file, the line (JSONL) or
item index/id, and the field, e.g. ``.../folio-validation.jsonl line 17: missing field 'conclusion'``.
With ``strict=False`` bad items (and unreadable files) are skipped instead, but never silently: the result
is a :class:`LoadedDataset` whose ``.skipped`` lists ``(location, reason)`` pairs, and one warning per
load summarises the counts by reason.
"""
from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from finelogic.config import data_dir
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Fact, Problem

log = logging.getLogger(__name__)

DATASETS = ("fld", "folio", "multi_logieval", "prontoqa", "logicmark", "paper_eval")
OFFLINE_ENV_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
# Hub copies we know how to read; Multi-LogiEval, ProntoQA (Logic-LM) and the paper JSON are GitHub-only.
HUB_IDS = {"fld": "hitachi-nlp/FLD.v2", "folio": "yale-nlp/FOLIO", "logicmark": "AxiomicLabs/LogicMark"}
HUB_DEFAULT_SPLIT = {"fld": "test", "folio": "validation", "logicmark": "train"}
PAPER_MULTI_LOGIEVAL_DEPTHS = (4, 5)
MULTI_LOGIEVAL_LOGIC_TYPES = ("fol", "pl", "nm")
# The Logic-LM ProntoQA set is the 5-hop set; depth is derived per item from its explanation (see below).
PRONTOQA_QUESTION_PREFIX = "Is the following statement true or false?"
FOLIO_QUESTION_PREFIX = re.compile(r"^.*?is the following statement true, false, or uncertain\?\s*", re.I)


class DataNotFoundError(FileNotFoundError):
    """No local file and no usable hub copy for a dataset; the message says where to put which file."""


class DatasetFormatError(ValueError):
    """A file or item does not match its published format; the message names file, line/item and field."""


class LoadedDataset(list):
    """A ``list[Problem]`` that also remembers what ``strict=False`` skipped.

    Attributes:
        skipped: ``(location, reason)`` per skipped item or file, e.g.
            ``("data/folio-validation.jsonl line 17", "missing field 'conclusion'")``.
    """

    def __init__(self, problems: Iterable[Problem] = (), skipped: Iterable[tuple[str, str]] = ()):
        super().__init__(problems)
        self.skipped: list[tuple[str, str]] = list(skipped)


class _ItemError(DatasetFormatError):
    """Raised inside a converter, naming the field; the loader prefixes the item's location."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _missing(field: str) -> _ItemError:
    return _ItemError(f"missing field '{field}'")


def _bad(field: str, what: str) -> _ItemError:
    return _ItemError(f"field '{field}': {what}")


@dataclass(frozen=True)
class _Item:
    """One raw record and where it came from (``location`` is what error messages print)."""

    data: Any
    location: str
    index: int
    stem: str  # default ids are ``<stem>_<index>``: the file name without suffix, or ``<repo>_<split>``
    encoding: str = "utf-8"


# --------------------------------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------------------------------


def read_text(path: Path) -> tuple[str, str]:
    """Decode a file as UTF-8, falling back to cp1252 (some Multi-LogiEval files); return (text, encoding).

    Raises:
        DatasetFormatError: the file is empty, or its bytes are neither UTF-8 nor cp1252.
    """
    raw = Path(path).read_bytes()
    if not raw.strip():
        raise DatasetFormatError(f"{path}: empty file")
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError as utf8_error:
        try:
            return raw.decode("cp1252"), "cp1252"
        except UnicodeDecodeError as cp_error:
            raise DatasetFormatError(
                f"{path}: undecodable bytes: {utf8_error.reason} at byte {utf8_error.start} for UTF-8, and "
                f"byte 0x{raw[cp_error.start]:02x} at {cp_error.start} is undefined in cp1252; "
                "re-save the file as UTF-8"
            ) from None


def _describe(index: int, record: Any) -> str:
    if isinstance(record, Mapping) and "id" in record:
        return f"item {index} (id {record['id']!r})"
    return f"item {index}"


def _read_items(path: Path) -> list[_Item]:
    """Records of a JSON list, a single JSON object, or JSON Lines (one object per line)."""
    text, encoding = read_text(path)
    stripped = text.lstrip()
    if path.suffix != ".jsonl" and stripped[:1] in "[{":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            if error.msg != "Extra data":  # "Extra data" = several objects: read it as JSON Lines
                raise DatasetFormatError(
                    f"{path} line {error.lineno} column {error.colno}: invalid JSON ({error.msg}); "
                    "truncated or corrupted file?"
                ) from None
        else:
            if isinstance(document, list):
                return [_Item(rec, f"{path} {_describe(i, rec)}", i, path.stem, encoding)
                        for i, rec in enumerate(document)]
            return [_Item(document, str(path), 0, path.stem, encoding)]
    items = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DatasetFormatError(
                f"{path} line {lineno}: invalid JSON ({error.msg} at column {error.colno}); truncated line?"
            ) from None
        items.append(_Item(record, f"{path} line {lineno}", len(items), path.stem, encoding))
    return items


def _convert(
    items: Iterable[_Item],
    convert: Callable[[_Item], Problem],
    strict: bool,
    skipped: list[tuple[str, str]],
) -> list[Problem]:
    problems = []
    for item in items:
        try:
            if not isinstance(item.data, Mapping):
                raise _ItemError(f"expected a JSON object, got {type(item.data).__name__}")
            problems.append(convert(item))
        except _ItemError as error:
            if strict:
                raise DatasetFormatError(f"{item.location}: {error.reason}") from None
            skipped.append((item.location, error.reason))
    return problems


def _load_files(
    files: Sequence[Path],
    convert: Callable[[_Item], Problem],
    strict: bool,
    read: Callable[[Path], list[_Item]] = _read_items,
) -> LoadedDataset:
    skipped: list[tuple[str, str]] = []
    problems: list[Problem] = []
    for path in files:
        try:
            items = read(path)
        except DatasetFormatError as error:
            if strict:
                raise
            skipped.append((str(path), str(error).removeprefix(f"{path}").lstrip(": ")))
            continue
        problems.extend(_convert(items, convert, strict, skipped))
    _warn_skipped(skipped)
    return LoadedDataset(problems, skipped)


def _warn_skipped(skipped: list[tuple[str, str]]) -> None:
    if skipped:
        counts = Counter(reason for _, reason in skipped)
        summary = "; ".join(f"{n} x {reason}" for reason, n in counts.most_common())
        log.warning("skipped %d bad item(s) (strict=False): %s", len(skipped), summary)


# --------------------------------------------------------------------------------------------------
# Small shared helpers
# --------------------------------------------------------------------------------------------------


def _field(record: Mapping[str, Any], name: str, kind: type | tuple[type, ...] = str) -> Any:
    if name not in record or record[name] is None:
        raise _missing(name)
    value = record[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _bad(name, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


def split_sentences(text: str) -> list[str]:
    """Split a context paragraph into sentences at ``. ``/``! ``/``? `` before a capital letter.

    A heuristic: FOLIO's Logic-LM contexts split this way give the v0.0 premise count for 176 of 204
    stories (the rest have premises that are several sentences or one sentence broken over two lines).
    """
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _facts(texts: Iterable[str]) -> tuple[Fact, ...]:
    return tuple(Fact(f"fact{i}", t.strip()) for i, t in enumerate(texts, start=1))


def _label(value: Any, field: str, mapping: Mapping[str, str]) -> str:
    key = str(value).strip().strip("_").strip().lower()
    if key not in mapping:
        raise _bad(field, f"unknown label {value!r} (expected one of {sorted(set(mapping))})")
    return mapping[key]


_FOLIO_LABELS = {"true": PROVED, "false": DISPROVED, "uncertain": UNKNOWN, "unknown": UNKNOWN}
_YES_NO = {"yes": PROVED, "no": DISPROVED}
_FLD_LABELS = {"proved": PROVED, "disproved": DISPROVED, "unknown": UNKNOWN}
_PAPER_LABELS = {**_FLD_LABELS, **_YES_NO}


# --------------------------------------------------------------------------------------------------
# FLD (v0.2 and FLDx2)
# --------------------------------------------------------------------------------------------------

_FLD_ID = re.compile(r"(?:^|(?<=\s))((?:sent|fact)\d+):\s*")
_FLD_REF = re.compile(r"\b(?:sent|fact)\d+\b")
_PROOF_DEFINITION = re.compile(r"->\s*((?:int|assump)\d+)\s*:\s*(.+?)\s*$")


def _numbered(value: Any, field: str) -> list[tuple[str, str]]:
    """``"sent1: a. sent2: b."`` (or a list of such strings) -> ``[("sent1", "a."), ("sent2", "b.")]``."""
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    if not isinstance(value, str):
        raise _bad(field, f"expected a string 'sent1: ... sent2: ...', got {type(value).__name__}")
    parts = _FLD_ID.split(value.strip())
    if parts[0].strip():
        raise _bad(field, f"expected 'sent1: ... sent2: ...', found text before the first id: {parts[0]!r:.60}")
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts), 2)]


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return value[0] if value else None
    return value or None


def fld_problem(record: Mapping[str, Any], *, problem_id: str, meta: Mapping[str, Any] | None = None) -> Problem:
    """One FLD v0.2 or FLDx2 record -> Problem (reference: datasets.md, "FLD").

    ``context``/``facts`` (``sent1: ... sent2: ...``) become facts ``fact1, fact2, ...`` in order; the
    original ids are kept in ``meta["original_ids"]`` and renamed consistently inside the proof. The proof
    is ``proofs[0]`` (FLDx2: ``steps``, joined with ``; `` when a list); formulas come from
    ``context_formula``/``facts_formula``, ``hypothesis_formula`` and the ``intN``/``assumpN`` definitions
    of ``proofs_formula[0]``. Label: ``world_assump_label`` (else ``proof_label``); depth: ``depth``.
    Raises :class:`DatasetFormatError` naming the field at fault.
    """
    hypothesis = _field(record, "hypothesis")
    context_field = "context" if "context" in record else "facts"
    if record.get(context_field) is None:
        raise _missing("context")
    numbered = _numbered(record[context_field], context_field)
    id_map = {old: f"fact{i}" for i, (old, _) in enumerate(numbered, start=1)}
    label_field = "world_assump_label" if record.get("world_assump_label") is not None else "proof_label"
    if record.get(label_field) is None:
        raise _missing("world_assump_label")
    label = _label(record[label_field], label_field, _FLD_LABELS)
    depth = record.get("depth")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool)):
        raise _bad("depth", f"expected int or null, got {depth!r}")

    def rename(text: str) -> str:
        return _FLD_REF.sub(lambda m: id_map.get(m.group(0), m.group(0)), text)

    proof = _first(record.get("proofs"))
    if proof is None and record.get("steps"):
        steps = record["steps"]
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
    consumed = {"hypothesis", context_field, "proofs", "steps", formula_field, "hypothesis_formula",
                "proofs_formula", label_field, "depth", "id"}
    return Problem(
        id=problem_id,
        dataset="fld",
        facts=tuple(Fact(id_map[old], text) for old, text in numbered),
        hypothesis=hypothesis,
        label=label,
        depth=depth,
        proof=rename(proof) if proof else None,
        formulas=formulas,
        meta={**(meta or {}), "original_ids": [old for old, _ in numbered],
              "original": {k: v for k, v in record.items() if k not in consumed}},
    )


def _fld_item(item: _Item) -> Problem:
    record = item.data
    problem_id = str(record.get("id", f"{item.stem}_{item.index}"))
    variant = "FLDx2" if "facts" in record and "context" not in record else "FLD v0.2"
    return fld_problem(record, problem_id=problem_id,
                       meta={"source": item.location, "format": variant})


# --------------------------------------------------------------------------------------------------
# FOLIO (v0.0, v2, Logic-LM)
# --------------------------------------------------------------------------------------------------


def _folio_item(item: _Item) -> Problem:
    """FOLIO v0.0 (premises list), v2 (newline-separated premises) or Logic-LM (context/question/answer).

    Labels True -> PROVED, False -> DISPROVED, Uncertain/Unknown -> UNKNOWN. FOLIO's own FOL annotations
    (not FLD notation) stay in ``meta["fol"]``.
    """
    record = item.data
    stem = item.stem
    if "context" in record and "premises" not in record:  # Logic-LM copy
        context = _field(record, "context")
        question = _field(record, "question")
        answer = str(_field(record, "answer")).strip()
        options = record.get("options") or ["A) True", "B) False", "C) Uncertain"]
        by_letter = {o.split(")")[0].strip(): o.split(")", 1)[-1].strip() for o in options}
        if answer not in by_letter:
            raise _bad("answer", f"{answer!r} is not one of the options {sorted(by_letter)}")
        return Problem(
            id=str(record.get("id", f"{stem}_{item.index}")),
            dataset="folio",
            facts=_facts(split_sentences(context)),
            hypothesis=FOLIO_QUESTION_PREFIX.sub("", question).strip(),
            label=_label(by_letter[answer], "answer", _FOLIO_LABELS),
            meta={"source": item.location, "format": "Logic-LM", "question": question},
        )
    premises = _field(record, "premises", (list, str))
    conclusion = _field(record, "conclusion")
    label = _label(_field(record, "label", (str, bool)), "label", _FOLIO_LABELS)
    variant = "v2" if isinstance(premises, str) else "v0.0"
    texts = premises.splitlines() if isinstance(premises, str) else premises
    if not all(isinstance(t, str) for t in texts):
        raise _bad("premises", "expected a list of strings")
    problem_id = record.get("example_id", record.get("id", f"{stem}_{item.index}"))
    meta: dict[str, Any] = {"source": item.location, "format": variant}
    if "story_id" in record:
        meta["story_id"] = record["story_id"]
    if "premises-FOL" in record or "conclusion-FOL" in record:
        fol = record.get("premises-FOL")
        meta["fol"] = {"premises": fol.splitlines() if isinstance(fol, str) else fol,
                       "conclusion": record.get("conclusion-FOL")}
    return Problem(id=str(problem_id), dataset="folio", facts=_facts(t for t in texts if t.strip()),
                   hypothesis=conclusion.strip(), label=label, meta=meta)


# --------------------------------------------------------------------------------------------------
# Multi-LogiEval
# --------------------------------------------------------------------------------------------------


def _multi_logieval_items(path: Path) -> list[_Item]:
    """One ``{"logic", "rule", "depth", "samples": [...]}`` file -> its samples (file fields attached)."""
    text, encoding = read_text(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DatasetFormatError(f"{path} line {error.lineno} column {error.colno}: invalid JSON "
                                 f"({error.msg}); truncated or corrupted file?") from None
    if not isinstance(document, dict):
        raise DatasetFormatError(f"{path}: expected an object with 'samples', got {type(document).__name__}")
    for name in ("logic", "rule", "depth", "samples"):
        if name not in document:
            raise DatasetFormatError(f"{path}: missing field '{name}'")
    match = re.fullmatch(r"d?(\d+)", str(document["depth"]).strip())
    if not match:
        raise DatasetFormatError(f"{path}: field 'depth': expected 'd<N>', got {document['depth']!r}")
    if not isinstance(document["samples"], list):
        raise DatasetFormatError(f"{path}: field 'samples': expected a list")
    shared = {"logic": document["logic"], "rule": document["rule"], "depth": int(match.group(1))}
    return [_Item({**shared, "sample": s}, f"{path} {_describe(i, s)}", i, path.stem, encoding)
            for i, s in enumerate(document["samples"])]


def _multi_logieval_item(item: _Item) -> Problem:
    """A sample: context sentences -> facts, question -> hypothesis, yes/no (any case) -> PROVED/DISPROVED."""
    sample = item.data["sample"]
    if not isinstance(sample, Mapping):
        raise _ItemError(f"expected a JSON object, got {type(sample).__name__}")
    context, question = _field(sample, "context"), _field(sample, "question")
    label = _label(_field(sample, "answer"), "answer", _YES_NO)
    logic, rule, depth = item.data["logic"], item.data["rule"], item.data["depth"]
    return Problem(
        id=f"d{depth}_{logic}_{rule}_{sample.get('id', item.index)}",
        dataset="multi_logieval",
        facts=_facts(split_sentences(context)),
        hypothesis=question.strip(),
        label=label,
        depth=depth,
        meta={"source": item.location, "encoding": item.encoding, "logic": logic, "rule": rule,
              "sample_id": sample.get("id")},
    )


def _multi_logieval_files(root: Path, depths: Sequence[int], logic_types: Sequence[str]) -> list[Path]:
    for base in (root, root / "data", root / "multi_logieval" / "data"):
        if any(base.glob("d*_Data")):
            break
    else:
        raise DataNotFoundError(f"no Multi-LogiEval 'd<N>_Data' folders under {root}: expected "
                                f"{_WHERE['multi_logieval']}")
    files = []
    for depth in depths:
        for logic in logic_types:
            folder = base / f"d{depth}_Data" / logic
            found = sorted(folder.glob("*.json"))
            if not found:  # a requested combination must not vanish silently
                raise DataNotFoundError(f"Multi-LogiEval: no *.json files in {folder} (depth {depth}, {logic})")
            files.extend(found)
    return files


# --------------------------------------------------------------------------------------------------
# ProntoQA (Logic-LM dev set)
# --------------------------------------------------------------------------------------------------


def _prontoqa_proof(explanation: Sequence[str], facts: Sequence[Fact], label: str) -> str | None:
    """The explanation chain (fact, rule, derived, rule, derived, ...) in FLD notation, or None.

    Each explanation rule/fact sentence must be one of the facts; the last step concludes ``hypothesis``
    (PROVED) or ``¬hypothesis`` (DISPROVED).
    """
    from finelogic.data.generators.prontoqa import chain_proof

    ids = {}
    for fact in facts:
        ids.setdefault(fact.text, fact.id)
    if len(explanation) < 3 or len(explanation) % 2 == 0:
        return None
    used = [explanation[0], *explanation[1::2]]
    if any(s not in ids for s in used):
        return None
    return chain_proof(ids[explanation[0]], [ids[s] for s in explanation[1::2]],
                       list(explanation[2::2])[:-1], negated=label == DISPROVED)


def _prontoqa_item(item: _Item) -> Problem:
    """Context sentences -> facts; question minus "Is the following statement true or false?" ->
    hypothesis; answer A/B -> PROVED/DISPROVED; ``explanation`` kept in meta and turned into the gold proof.

    Depth = number of rule applications in the explanation, ``(len(explanation) - 1) / 2``: 5 for every
    item of the Logic-LM set (11-sentence explanations); None without an explanation.
    """
    record = item.data
    context, question = _field(record, "context"), _field(record, "question")
    answer = str(_field(record, "answer")).strip()
    label = _label(answer, "answer", {"a": PROVED, "b": DISPROVED, "true": PROVED, "false": DISPROVED})
    explanation = record.get("explanation")
    if explanation is not None and not (isinstance(explanation, list)
                                        and all(isinstance(s, str) for s in explanation)):
        raise _bad("explanation", "expected a list of sentences")
    facts = _facts(split_sentences(context))
    hypothesis = question.strip()
    if hypothesis.startswith(PRONTOQA_QUESTION_PREFIX):
        hypothesis = hypothesis[len(PRONTOQA_QUESTION_PREFIX):].strip()
    depth = (len(explanation) - 1) // 2 if explanation and len(explanation) % 2 == 1 else None
    return Problem(
        id=str(record.get("id", f"{item.stem}_{item.index}")),
        dataset="prontoqa",
        facts=facts,
        hypothesis=hypothesis,
        label=label,
        depth=depth,
        proof=_prontoqa_proof(explanation, facts, label) if explanation else None,
        meta={"source": item.location, "explanation": explanation, "options": record.get("options")},
    )


# --------------------------------------------------------------------------------------------------
# LogicMark
# --------------------------------------------------------------------------------------------------

LOGICMARK_CONTEXT = re.compile(r"\AIf:\n(?P<premises>.*?)\n\n(?P<stem>Then)\s*\Z", re.S)


def logicmark_problem(record: Mapping[str, Any], *, source: str = "") -> Problem:
    """A LogicMark record (card format) -> Problem with options/answer_index, label None.

    ``context`` must read ``If:\\n<premises, one a line>\\n\\nThen``: the premises become the facts and
    ``hypothesis`` holds the closing ``Then`` the options complete, so ``"If:\\n" + facts + "\\n\\n" +
    hypothesis`` rebuilds the context exactly. depth = ``hop_depth``. Raises :class:`DatasetFormatError`.
    """
    context = _field(record, "context")
    match = LOGICMARK_CONTEXT.match(context)
    if not match:
        raise _bad("context", "expected 'If:\\n<premises>\\n\\nThen'")
    options = _field(record, "options", list)
    if not options or not all(isinstance(o, str) for o in options):
        raise _bad("options", "expected a non-empty list of strings")
    answer_index = _field(record, "answer_index", int)
    if not 0 <= answer_index < len(options):
        raise _bad("answer_index", f"{answer_index} is out of range for {len(options)} options")
    if "answer" in record and record["answer"] != options[answer_index]:
        raise _bad("answer", f"{record['answer']!r} != options[{answer_index}] = {options[answer_index]!r}")
    hop_depth = _field(record, "hop_depth", int)
    return Problem(
        id=str(_field(record, "id", (str, int))),
        dataset="logicmark",
        facts=_facts(line for line in match.group("premises").split("\n") if line.strip()),
        hypothesis=match.group("stem"),
        options=tuple(options),
        answer_index=answer_index,
        depth=hop_depth,
        meta={"source": source, "domain": record.get("domain", "Symbolic")},
    )


def _logicmark_item(item: _Item) -> Problem:
    return logicmark_problem(item.data, source=item.location)


# --------------------------------------------------------------------------------------------------
# The paper's merged evaluation JSON
# --------------------------------------------------------------------------------------------------

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
    raise _ItemError(f"cannot infer the dataset from fields {sorted(record)}")


def _paper_eval_item(item: _Item) -> Problem:
    """Facts (``Fact1: ...``) and the ``Hypothesis:``/``Question:`` line are parsed from ``input`` (what
    the model saw); label from ``proof_label`` (``__YES__``/``__NO__`` -> PROVED/DISPROVED). FLD items add
    depth, proof and formulas from ``original_data``; ProntoQA items depth and proof from ``explanation``."""
    record = item.data
    text = _field(record, "input")
    label = _label(_field(record, "proof_label"), "proof_label", _PAPER_LABELS)
    dataset = infer_paper_dataset(record)
    hypothesis_match = _INPUT_HYPOTHESIS.search(text)
    if not hypothesis_match:
        raise _bad("input", "no 'Hypothesis:' or 'Question:' line")
    parts = _INPUT_FACT.split(text[: hypothesis_match.start()])
    facts = tuple(Fact(f"fact{parts[i]}", parts[i + 1].strip()) for i in range(1, len(parts), 2))
    if not facts:
        raise _bad("input", "no 'Fact1: ...' lines before the hypothesis")
    problem_id = str(record.get("id", f"{dataset}_{item.index}"))
    depth, proof, formulas = record.get("depth"), None, {}
    original = {k: v for k, v in record.items() if k not in ("input", "proof_label")}
    if dataset == "fld":
        if not isinstance(record["original_data"], Mapping):
            raise _bad("original_data", "expected an object with the FLD fields")
        try:
            fld = fld_problem(record["original_data"], problem_id=problem_id)
        except _ItemError as error:
            raise _ItemError(f"original_data: {error.reason}") from None
        depth, proof, formulas = fld.depth, fld.proof, fld.formulas
    elif dataset == "prontoqa" and isinstance(record.get("explanation"), list):
        explanation = record["explanation"]
        depth = (len(explanation) - 1) // 2 if len(explanation) % 2 == 1 else None
        proof = _prontoqa_proof(explanation, facts, label)
    return Problem(
        id=problem_id, dataset=dataset, facts=facts, hypothesis=hypothesis_match.group(1).strip(),
        label=label, depth=depth, proof=proof, formulas=formulas,
        meta={"source": item.location, "paper_eval": True, "original": original},
    )


# --------------------------------------------------------------------------------------------------
# Finding the files
# --------------------------------------------------------------------------------------------------

_CONVERTERS: dict[str, Callable[[_Item], Problem]] = {
    "fld": _fld_item, "folio": _folio_item, "prontoqa": _prontoqa_item,
    "logicmark": _logicmark_item, "paper_eval": _paper_eval_item,
}

_WHERE = {
    "fld": "fld/*.json or fld/*.jsonl (FLD v0.2 or FLDx2 records, e.g. fld/test.jsonl)",
    "folio": "folio/folio-validation.jsonl (FOLIO v0.0), folio/folio_v2_validation.jsonl (v2) "
             "or folio/Logic-LLM_data_FOLIO/dev.json (Logic-LM)",
    "multi_logieval": "multi_logieval/data/d4_Data/{fol,pl,nm}/*.json and d5_Data/... (GitHub "
                      "Mihir3009/Multi-LogiEval)",
    "prontoqa": "prontoqa/dev.json (Logic-LM's 500-item 5-hop set)",
    "logicmark": "logicmark/*.json or logicmark/*.jsonl (records in the LogicMark card's format)",
    "paper_eval": "paper_eval/*.json (the authors' merged evaluation JSON)",
}


def _dataset_folder(base: Path, name: str) -> Path | None:
    """``base/name`` in the published layout, ``base`` itself when it is that folder, None when ``base``
    is a root that lacks it (holds other datasets' folders)."""
    if (base / name).is_dir():
        return base / name
    return None if any((base / other).is_dir() for other in DATASETS) else base


def _local_files(name: str, base: Path, split: str | None) -> list[Path]:
    """The files of ``name`` under ``base`` (a file, a dataset folder or a root in the published layout)."""
    if base.is_file():
        return [base]
    folder = _dataset_folder(base, name)
    if folder is None:
        return []
    if name == "folio":
        split = split or "validation"
        candidates = [f"folio_v2_{split}.jsonl", f"folio-{split}.jsonl", f"folio_{split}.jsonl"]
        if split in ("validation", "dev"):
            candidates.append("Logic-LLM_data_FOLIO/dev.json")
        return [folder / c for c in candidates if (folder / c).is_file()][:1]
    if name == "prontoqa":
        file = folder / f"{split or 'dev'}.json"
        return [file] if file.is_file() else []
    files = sorted(p for p in folder.glob("*.json*") if p.suffix in (".json", ".jsonl"))
    return [p for p in files if split is None or split in p.stem]


def _hub_allowed() -> bool:
    return not any(os.environ.get(v, "").strip().lower() not in ("", "0", "false", "no")
                   for v in OFFLINE_ENV_VARS)


def _from_hub(name: str, split: str | None, strict: bool) -> LoadedDataset:
    import datasets  # heavy: only when actually loading from the hub

    repo, split = HUB_IDS[name], split or HUB_DEFAULT_SPLIT[name]
    rows = datasets.load_dataset(repo, split=split)
    items = [_Item(dict(row), f"hf:{repo}[{split}] {_describe(i, row)}", i,
                   f"{repo.split('/')[-1]}_{split}")
             for i, row in enumerate(rows)]
    skipped: list[tuple[str, str]] = []
    problems = _convert(items, _CONVERTERS[name], strict, skipped)
    _warn_skipped(skipped)
    return LoadedDataset(problems, skipped)


def load_dataset(
    name: str,
    path: str | os.PathLike | None = None,
    split: str | None = None,
    *,
    strict: bool = True,
    **options: Any,
) -> LoadedDataset:
    """Load a benchmark as Problem records.

    Args:
        name: one of ``fld``, ``folio``, ``multi_logieval``, ``prontoqa``, ``logicmark``, ``paper_eval``.
        path: a file, a dataset folder or a root folder in the published layout (module docstring);
            default ``$FINELOGIC_DATA_DIR``, then the Hugging Face hub.
        split: file/split selector (``validation``, ``train``, ``dev``, ``test``...); default per dataset.
        strict: raise :class:`DatasetFormatError` on the first bad item (default) or skip and report it
            in ``.skipped``.
        **options: ``multi_logieval`` only: ``depths`` (default (4, 5), the paper's) and ``logic_types``
            (default ``("fol", "pl", "nm")``): 390 items.

    Returns:
        A :class:`LoadedDataset` (a list of Problems with ``.skipped``), in file order.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {DATASETS}")
    if options and name != "multi_logieval":
        raise TypeError(f"load_dataset({name!r}) takes no options {sorted(options)}")
    base = Path(path).expanduser() if path is not None else data_dir()
    if path is not None and not base.exists():
        raise DataNotFoundError(f"{base}: no such file or folder (expected {_WHERE[name]})")
    if name == "multi_logieval":
        if base is not None:
            try:
                return load_multi_logieval(base, strict=strict, **options)
            except DataNotFoundError as error:
                if path is not None:
                    raise
                raise DataNotFoundError(f"{error} ($FINELOGIC_DATA_DIR = {base})") from None
    elif base is not None:
        files = _local_files(name, base, split)
        if files:
            log.info("loading %s from %s", name, ", ".join(map(str, files)))
            return _load_files(files, _CONVERTERS[name], strict)
        if path is not None:
            raise DataNotFoundError(f"no {name} files in {base}: expected {_WHERE[name]}")
    if name in HUB_IDS and _hub_allowed():
        return _from_hub(name, split, strict)
    hub = (f"; the hub copy {HUB_IDS[name]} was not tried because "
           f"{'/'.join(OFFLINE_ENV_VARS)} is set") if name in HUB_IDS else ""
    raise DataNotFoundError(
        f"no local files for {name!r}: put {_WHERE[name]} under $FINELOGIC_DATA_DIR "
        f"(now {os.environ.get('FINELOGIC_DATA_DIR', 'unset')}) or pass path=...{hub}"
    )


def load_multi_logieval(
    path: str | os.PathLike,
    *,
    depths: Sequence[int] = PAPER_MULTI_LOGIEVAL_DEPTHS,
    logic_types: Sequence[str] = MULTI_LOGIEVAL_LOGIC_TYPES,
    strict: bool = True,
) -> LoadedDataset:
    """Multi-LogiEval files ``data/d{N}_Data/{fol,pl,nm}/<RULES>.json`` -> Problems (depth = the file's).

    ``path`` is one file, or a folder holding ``d<N>_Data`` folders (directly, in ``data/``, or in
    ``multi_logieval/data/``). Files decode as UTF-8, else cp1252 (``meta["encoding"]`` says which).
    """
    base = Path(path).expanduser()
    unknown = set(logic_types) - set(MULTI_LOGIEVAL_LOGIC_TYPES)
    if unknown:
        raise ValueError(f"unknown Multi-LogiEval logic types {sorted(unknown)}")
    files = [base] if base.is_file() else _multi_logieval_files(base, depths, logic_types)
    return _load_files(files, _multi_logieval_item, strict, read=_multi_logieval_items)
