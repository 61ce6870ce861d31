"""Where a dataset's files come from: a path, ``$FINELOGIC_DATA_DIR`` in the published layout, or the hub.

The published layout under ``$FINELOGIC_DATA_DIR`` (one folder per dataset, named as the dataset)::

    folio/folio-validation.jsonl            (v0.0; or folio_v2_validation.jsonl, Logic-LLM_data_FOLIO/dev.json)
    multi_logieval/data/d{N}_Data/{fol,pl,nm}/<RULES>.json
    prontoqa/dev.json
    fld/*.json | *.jsonl                    (FLD v0.2 or FLDx2 records)
    logicmark/*.json | *.jsonl
    paper_eval/*.json

Without ``$FINELOGIC_DATA_DIR``, FOLIO, Multi-LogiEval and ProntoQA are fetched from their public homes at
pinned commits (:mod:`finelogic.data.loaders.remote`), and the Hugging Face hub (``datasets.load_dataset``)
is tried for formats with a hub copy (FLD, FOLIO v2, LogicMark); both only when online (``remote``'s rules:
``FINELOGIC_OFFLINE``, ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, else a connection probe).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable

from finelogic.config import data_dir
from finelogic.data.loaders.remote import OFFLINE_ENV_VARS, network_allowed
from finelogic.data.loaders.records import DataDirError, DataNotFoundError, Item, LoadedDataset, convert_items, describe, warn_skipped
from finelogic.data.problem import Problem



def default_root() -> Path | None:
    """``$FINELOGIC_DATA_DIR`` (None when unset).

    Raises:
        DataDirError: it is set but names no folder (a typo must not turn real data into stand-ins).
    """
    root = data_dir()
    if root is not None and not root.is_dir():
        raise DataDirError(f"FINELOGIC_DATA_DIR={os.environ.get('FINELOGIC_DATA_DIR')}: "
                           f"{'not a folder' if root.exists() else 'no such folder'}; unset it or point it "
                           "at the data root (folio/, multi_logieval/, prontoqa/, ...)")
    return root


def dataset_folder(base: Path, name: str, known: Iterable[str]) -> Path | None:
    """``base/name`` in the published layout, ``base`` itself when it is that folder, None when ``base``
    is a root that lacks it (holds other datasets' folders; ``known`` names them)."""
    if (base / name).is_dir():
        return base / name
    return None if any((base / other).is_dir() for other in known) else base


def hub_allowed() -> bool:
    """Whether to try the Hugging Face hub: never with ``FINELOGIC_OFFLINE=1`` or ``HF_*_OFFLINE`` set,
    always with ``FINELOGIC_OFFLINE=0``, else when huggingface.co answers (:func:`remote.network_allowed`)."""
    return network_allowed("huggingface.co")


def from_hub(repo: str, split: str, convert: Callable[[Item], Problem], strict: bool) -> LoadedDataset:
    """Every row of ``repo[split]`` on the Hugging Face hub through ``convert``."""
    import datasets  # heavy: only when actually loading from the hub

    try:
        rows = datasets.load_dataset(repo, split=split)
    except Exception as error:  # a gated, renamed or unreachable copy: the caller falls back to stand-ins
        raise DataNotFoundError(f"hf:{repo}[{split}] could not be loaded: {type(error).__name__}: {error}") from error
    items = [Item(dict(row), f"hf:{repo}[{split}] {describe(i, row)}", i, f"{repo.split('/')[-1]}_{split}")
             for i, row in enumerate(rows)]
    skipped: list[tuple[str, str]] = []
    problems = convert_items(items, convert, strict, skipped)
    warn_skipped(skipped)
    return LoadedDataset(problems, skipped)
