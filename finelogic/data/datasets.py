"""The datasets: one :class:`Dataset` record each, read by every layer, and :func:`load_dataset`.

A new dataset is one format module of :mod:`finelogic.data.loaders` (``book/data-formats.md``) and one
record in :data:`DATASETS`. Malformed files and items raise :class:`DatasetFormatError` naming the file,
line or item and field; ``strict=False`` skips them and lists them in ``LoadedDataset.skipped``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finelogic.config import data_dir
from finelogic.data.loaders import fld, folio, logicmark, multi_logieval, paper_eval, prontoqa, remote
from finelogic.data.loaders.records import (DataDirError, DataNotFoundError, DatasetFormatError, Format, Item,
                                           LoadedDataset, convert_items, data_file, describe, load_files, warn_skipped)
from finelogic.data.loaders.remote import OFFLINE_ENV_VARS, RemoteFile, Source
from finelogic.data.problem import DISPROVED, LABELS, PROVED

log = logging.getLogger("finelogic.data.loaders")

__all__ = ["Dataset", "DATASETS", "TEST_SETS", "dataset", "load_dataset", "DataDirError", "DataNotFoundError",
           "DatasetFormatError", "LoadedDataset"]


@dataclass(frozen=True)
class Dataset:
    """One dataset, everything about it that is not in its files; ``name`` is ``Problem.dataset`` and its folder
    in the published layout, ``paper_name`` as the paper's tables write it."""

    name: str
    paper_name: str
    format: Format
    labels: tuple[str, ...] = ()  # its prompt's labels in marker order (Table 1); none for multiple choice
    yes_no_gold: bool = False  # released gold is __YES__/__NO__ (finelogic.eval.extraction.released_gold_marker)
    source: Source | None = None  # its published files at a pinned commit, fetched without a local copy
    hub_id: str | None = None  # its Hugging Face copy, and that copy's default split
    hub_split: str | None = None


_MULTI_LOGIEVAL_SHA256 = (
    ("data/d4_Data/fol/BD_C_DS_MP.json", "2f298067f4941ebc14ce5fe3961fb5586a9ad89a3cdd7e1aa9a968ffea9df4b5"),
    ("data/d4_Data/fol/BD_DS_MT_DS.json", "e73b284618d1c62f1f66406beec3301449da578e52850b186949402dee2e743f"),
    ("data/d4_Data/fol/BD_DS_MT_MT.json", "1628e0a90e25aba320be4b2fc9764f40b2d67cdb731388e024b7f7bfc30c2562"),
    ("data/d4_Data/fol/CD_C_DS_MP.json", "a945d89853f0afcd41ed2968eb418352bf2c2ac231f330c2c752b38f772cdf84"),
    ("data/d4_Data/fol/CD_DS_MP_MP.json", "e022212239772e8bb91acaf0778afa2a98fec67d1ca0b1894a2961c9092bf3c3"),
    ("data/d4_Data/fol/HS_CD_DS_MP.json", "ba3bce89d8ecd82d405fc3825cb6bd5662908d7413e34f6dc35611a776f386a4"),
    ("data/d4_Data/fol/HS_MT_DS_MP.json", "fa68046e6203afb385c769a9d3471cdb3fc09ecd1d78b01d5d126f94678ab20e"),
    ("data/d4_Data/fol/I_MT_DMT_DS.json", "7154f4d5902f55e28faceea27aa023ea79a50450cb329909f4f15d19af33b22a"),
    ("data/d4_Data/nm/d4_1.json", "1b09197bc8d783f0acc679930e37b2d5d10ca4405d32d8e0d81d409bff71f46a"),
    ("data/d4_Data/nm/d4_2.json", "1b8643d44df7a2475f8620de53e0ca9a26ba5142444eebb025c377a223040789"),
    ("data/d4_Data/pl/BD_C_DS_MP.json", "b0c7555445336612eacf7e856b5954d4abe1eaf1afcd835863fb118c080e9d3e"),
    ("data/d4_Data/pl/BD_DS_MT_DS.json", "1778fbd78ba17cb9b1ea16138efeb89654c9dd57ba1b889d4ec0bfff756e2ab5"),
    ("data/d4_Data/pl/BD_DS_MT_MT.json", "0c82efe51193390e447d413119735f2af1f3dbbcd0dc7adaf3bd8cfe5bb4e438"),
    ("data/d4_Data/pl/CD_C_DS_MP.json", "94a4f393991bd69886d4be16e40b35e38da72d1192768a59d92381af826061fc"),
    ("data/d4_Data/pl/CD_DS_MP_MP.json", "59a9574c9c810c2e31533168b4b2d727db6731101729ef79ee2686a5017fb674"),
    ("data/d4_Data/pl/HS_CD_DS_MP.json", "c5dc391935e04dc7b448c0c17b4cd7d258e96ab20875744b9f00553fc62ddef1"),
    ("data/d4_Data/pl/HS_MT_DS_MP.json", "94f4cfe5ce7af3b9218877d1a53e23ea707741ebbdcd610ddcb4b269a4f0e6ed"),
    ("data/d4_Data/pl/I_MT_DMT_DS.json", "09013b6376301317b21c55d94fe290a59c83cfe209f74222aba2f71c859b3d84"),
    ("data/d5_Data/fol/BD_C_DS_MP_MP.json", "e23e1ed1c7b525e5b7d064e87d0ed28a26f383b67b4ee48dd571179084fe8e09"),
    ("data/d5_Data/fol/CD_C_DS_MP_MP.json", "52302340cf0111cb7c1bf8e85caa4073f564c30617fa19f036f3fde58243fdd9"),
    ("data/d5_Data/fol/HS_MT_DS_MP_MP.json", "1fc76322a8c54a182933759b858b37f482c9b9d07b131f0d5df6ba5364a68069"),
    ("data/d5_Data/nm/d5_1.json", "278d127eb5fc95e3075d743b37241b98bb569a9ab8d4e6958aed2fa58c745256"),
    ("data/d5_Data/pl/BD_C_DS_MP_MP.json", "77aa8db1ab0a992d44972258fe935a22eb5bab67a3051ab173ddcebd6950cd06"),
    ("data/d5_Data/pl/CD_C_DS_MP_MP.json", "783a0f26ffcb4eefedf20bf896e515c4ab6993772566484d9de940126cd3e31a"),
    ("data/d5_Data/pl/HS_MT_DS_MP_MP.json", "bc14ab3cb8a31ebaf4a2038ce2b5e67e6a72c5df3d9e719183b0c9117dc6b36b"),
)

# The published files the paper evaluated on (FOLIO validation, Multi-LogiEval d4 + d5, ProntoQA's 500-item
# 5-hop dev set as Logic-LM publishes it), each pinned to a commit and its bytes' SHA-256.
DATASETS: tuple[Dataset, ...] = (
    Dataset("fld", "FLD", fld.FORMAT, LABELS, hub_id="hitachi-nlp/FLD.v2", hub_split="test"),
    Dataset("folio", "FOLIO", folio.FORMAT, LABELS, hub_id="yale-nlp/FOLIO", hub_split="validation", source=Source(
        "Yale-LILY/FOLIO", "5d7bb84c7edab3fb358e057d2807f19cf5cf5e2d", "data/v0.0/",
        (RemoteFile("folio-validation.jsonl", "6922c988ef10987bd6545568ee8e63e897af80994591fa20539767da58f8e3d1"),),
        "CC-BY-SA-4.0")),
    Dataset("multi_logieval", "Multi-LogiEval", multi_logieval.FORMAT, (PROVED, DISPROVED), yes_no_gold=True,
            source=Source("Mihir3009/Multi-LogiEval", "6d55ade5dfcc35e1382bf62335df3a061bc4c781", "",
                          tuple(RemoteFile(path, sha) for path, sha in _MULTI_LOGIEVAL_SHA256), "MIT")),
    Dataset("prontoqa", "ProntoQA", prontoqa.FORMAT, (PROVED, DISPROVED), source=Source(
        "teacherpeterpan/Logic-LLM", "d29f1e5e7203e8826cb9c41ba3003e43dc0b9d34", "data/ProntoQA/",
        (RemoteFile("dev.json", "2d2e9d0adbef05cd66b51d11516b8fb3d3fb2cbc1664867d1123a000f7b11a5f"),),
        "MIT (Logic-LLM); the ProntoQA generator is Apache-2.0")),
    Dataset("logicmark", "LogicMark", logicmark.FORMAT, hub_id="AxiomicLabs/LogicMark", hub_split="train"),
    Dataset("paper_eval", "the paper's merged evaluation files", paper_eval.FORMAT),
)
#: The paper's four test sets (Tables 1 and 2), in its order.
TEST_SETS = DATASETS[:4]


def dataset(name: str) -> Dataset:
    """The record of dataset ``name``; a ValueError naming the known ones otherwise."""
    found = next((d for d in DATASETS if d.name == name), None)
    if found is None:
        raise ValueError(f"unknown dataset {name!r}; expected one of {tuple(d.name for d in DATASETS)}")
    return found


def load_dataset(
    name: str,
    path: str | os.PathLike | None = None,
    split: str | None = None,
    *,
    strict: bool = True,
    **options: Any,
) -> LoadedDataset:
    """Dataset ``name`` (one of :data:`DATASETS`) as Problem records, in file order. ``path``: a file, a dataset
    folder or a root in the published layout; default ``$FINELOGIC_DATA_DIR``, else the record's ``source``
    fetched once and SHA-256 checked (:mod:`finelogic.data.loaders.remote`), else its hub copy when online.
    ``options``: ``multi_logieval``'s ``depths`` (default the paper's (4, 5)) and ``logic_types``."""
    data = dataset(name)
    fmt = data.format
    unknown = set(options) - set(fmt.options)
    if unknown:
        raise TypeError(f"load_dataset({name!r}) takes no options {sorted(unknown)}")
    base = Path(path).expanduser() if path is not None else default_root()
    if path is not None and os.path.lexists(base) and not base.is_dir():
        data_file(base)  # a FIFO, socket, dangling or looping link given as the file: named, never read
    if path is not None and not base.exists():
        raise DataNotFoundError(f"{base}: no such file or folder (expected {fmt.where})")
    files: list[Path] = []
    if base is not None:
        try:
            files = _local_files(name, fmt, base, split, options)
        except DataNotFoundError as error:
            if path is not None:
                raise
            raise DataNotFoundError(f"{error} ($FINELOGIC_DATA_DIR = {base})") from None
        if not files and path is not None:
            raise DataNotFoundError(f"no {name} files in {base}: expected {base}/{fmt.where}")
        where = ", ".join(map(str, files))
    elif data.source is not None:
        root = remote.fetched_root(name, data.source)  # None when offline (said once) or the fetch failed (logged)
        files = _local_files(name, fmt, root, split, options) if root is not None else []
        where = f"{root} (fetched from {data.source.home})"
    if files:
        log.info("loading %s from %s", name, where)
        absent = fmt.missing(files, **options) if fmt.missing and len(files) > 1 else []
        if absent:  # a selection of published files with some missing
            message = (f"{name}: {len(absent)} published file(s) missing, so fewer items than documented: "
                       f"{', '.join(absent)}")
            if strict:
                raise DataNotFoundError(message)
            log.warning("%s (strict=False: loading the rest)", message)
        return load_files(files, fmt, strict)
    if data.hub_id and remote.network_allowed("huggingface.co"):
        return from_hub(data.hub_id, split or data.hub_split, fmt.convert, strict)
    why = (f"{'/'.join(('FINELOGIC_OFFLINE',) + OFFLINE_ENV_VARS)} is set" if remote.env_offline()
           else "huggingface.co is not reachable")
    hub = f"; the hub copy {data.hub_id} was not tried because {why}" if data.hub_id else ""
    raise DataNotFoundError(
        f"no local files for {name!r}: put {fmt.where} under $FINELOGIC_DATA_DIR "
        f"(now {os.environ.get('FINELOGIC_DATA_DIR', 'unset')}) or pass path=...{hub}"
    )


def default_root() -> Path | None:
    """``$FINELOGIC_DATA_DIR`` (None when unset); a :class:`DataDirError` when it names no folder."""
    root = data_dir()
    if root is not None and not root.is_dir():
        raise DataDirError(f"FINELOGIC_DATA_DIR={os.environ.get('FINELOGIC_DATA_DIR')}: "
                           f"{'not a folder' if root.exists() else 'no such folder'}; unset it or point it "
                           "at the data root (folio/, multi_logieval/, prontoqa/, ...)")
    return root


def from_hub(repo: str, split: str, convert: Any, strict: bool) -> LoadedDataset:
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


def _local_files(name: str, fmt: Format, base: Path, split: str | None, options: dict[str, Any]) -> list[Path]:
    """The files of ``name`` under ``base``: a file, ``base/name``, or ``base`` when it is that folder."""
    if base.is_file():
        return [base]
    if not (base / name).is_dir() and any((base / d.name).is_dir() for d in DATASETS):
        return []
    return fmt.find(base / name if (base / name).is_dir() else base, split, **options)
