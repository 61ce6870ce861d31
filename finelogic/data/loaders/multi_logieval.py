"""Multi-LogiEval: ``multi_logieval/data/d{N}_Data/{fol,pl,nm}/<RULES>.json`` (GitHub Mihir3009/Multi-LogiEval)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Mapping, Sequence

from finelogic.data.loaders.records import (MAX_STRING, YES_NO, DataNotFoundError, DatasetFormatError, Format, Item,
                                           ItemError, check_strings, describe, label, numbered_facts, parse_json,
                                           read_text, required, split_sentences)
from finelogic.data.problem import Problem

PAPER_MULTI_LOGIEVAL_DEPTHS = (4, 5)
MULTI_LOGIEVAL_LOGIC_TYPES = ("fol", "pl", "nm")
WHERE = "multi_logieval/data/d4_Data/{fol,pl,nm}/*.json and d5_Data/... (GitHub Mihir3009/Multi-LogiEval)"
# The paper's 390 items: the published rule files of depths 4 and 5 (fol and pl: 15 samples, nm: 20).
_PAPER_RULES = {
    (4, "fol"): ("BD_C_DS_MP", "BD_DS_MT_DS", "BD_DS_MT_MT", "CD_C_DS_MP", "CD_DS_MP_MP", "HS_CD_DS_MP",
                 "HS_MT_DS_MP", "I_MT_DMT_DS"),
    (5, "fol"): ("BD_C_DS_MP_MP", "CD_C_DS_MP_MP", "HS_MT_DS_MP_MP"),
    (4, "nm"): ("d4_1", "d4_2"),
    (5, "nm"): ("d5_1",),
}
_PAPER_RULES[4, "pl"], _PAPER_RULES[5, "pl"] = _PAPER_RULES[4, "fol"], _PAPER_RULES[5, "fol"]
PAPER_FILES = {f"d{depth}_Data/{logic}/{rule}.json": 20 if logic == "nm" else 15
               for (depth, logic), rules in _PAPER_RULES.items() for rule in rules}


def read(path: Path) -> list[Item]:
    """One ``{"logic", "rule", "depth", "samples": [...]}`` file -> its samples, the file's fields attached."""
    text, encoding = read_text(path)
    try:
        document = parse_json(text, str(path))
    except json.JSONDecodeError as error:
        raise DatasetFormatError(f"{path} line {error.lineno} column {error.colno}: invalid JSON "
                                 f"({error.msg}); truncated or corrupted file?") from None
    if not isinstance(document, dict):
        raise DatasetFormatError(f"{path}: expected an object with 'samples', got {type(document).__name__}")
    if len(text) > MAX_STRING:  # a shorter file cannot hold a longer string
        check_strings(document, str(path))
    for name in ("logic", "rule", "depth", "samples"):
        if name not in document:
            raise DatasetFormatError(f"{path}: missing field '{name}'")
    match = re.fullmatch(r"d?(\d+)", str(document["depth"]).strip())
    if not match:
        raise DatasetFormatError(f"{path}: field 'depth': expected 'd<N>', got {document['depth']!r}")
    if not isinstance(document["samples"], list):
        raise DatasetFormatError(f"{path}: field 'samples': expected a list")
    shared = {"logic": document["logic"], "rule": document["rule"], "depth": int(match.group(1))}
    return [Item({**shared, "sample": s}, f"{path} {describe(i, s)}", i, path.stem, encoding)
            for i, s in enumerate(document["samples"])]


def convert(item: Item) -> Problem:
    """A sample: context sentences -> facts, question -> hypothesis, yes/no (any case) -> PROVED/DISPROVED."""
    sample = item.data["sample"]
    if not isinstance(sample, Mapping):
        raise ItemError(f"expected a JSON object, got {type(sample).__name__}")
    context, question = required(sample, "context"), required(sample, "question")
    verdict = label(required(sample, "answer"), "answer", YES_NO)
    logic, rule, depth = item.data["logic"], item.data["rule"], item.data["depth"]
    return Problem(
        id=f"d{depth}_{logic}_{rule}_{sample.get('id', item.index)}",
        dataset="multi_logieval",
        facts=numbered_facts(split_sentences(context)),
        hypothesis=question.strip(),
        label=verdict,
        depth=depth,
        meta={"source": item.location, "encoding": item.encoding, "logic": logic, "rule": rule,
              "sample_id": sample.get("id")},
    )


def find(
    root: Path,
    split: str | None = None,
    *,
    depths: Sequence[int] = PAPER_MULTI_LOGIEVAL_DEPTHS,
    logic_types: Sequence[str] = MULTI_LOGIEVAL_LOGIC_TYPES,
) -> list[Path]:
    """The rule files of the requested depths and logic types under ``root`` (holding ``d<N>_Data`` folders
    directly, in ``data/`` or in ``multi_logieval/data/``); ``split`` is unused."""
    unknown = set(logic_types) - set(MULTI_LOGIEVAL_LOGIC_TYPES)
    if unknown:
        raise ValueError(f"unknown Multi-LogiEval logic types {sorted(unknown)}")
    for base in (root, root / "data", root / "multi_logieval" / "data"):
        if any(base.glob("d*_Data")):
            break
    else:
        raise DataNotFoundError(f"no Multi-LogiEval 'd<N>_Data' folders under {root}: expected {WHERE}")
    files = []
    for depth in depths:
        for logic in logic_types:
            folder = base / f"d{depth}_Data" / logic
            found = sorted(folder.glob("*.json"))
            if not found:  # a requested combination must not vanish silently
                raise DataNotFoundError(f"Multi-LogiEval: no *.json files in {folder} (depth {depth}, {logic})")
            files.extend(found)
    return files


def missing(
    files: list[Path],
    *,
    depths: Sequence[int] = PAPER_MULTI_LOGIEVAL_DEPTHS,
    logic_types: Sequence[str] = MULTI_LOGIEVAL_LOGIC_TYPES,
) -> list[str]:
    """The published rule files of the requested paper depths/logic types (4 and 5) absent from ``files``, as
    paths in the folder that holds the ``d<N>_Data`` folders of ``files``."""
    found = {"/".join(Path(f).parts[-3:]) for f in files}
    wanted = [name for name in PAPER_FILES
              if int(name[1]) in depths and name.split("/")[1] in logic_types]
    return [str(Path(files[0]).parents[2] / name) for name in wanted if name not in found]


FORMAT = Format(convert=convert, where=WHERE, find=find, read=read, options=("depths", "logic_types"),
                counts=PAPER_FILES, missing=missing)
