"""Loaders for the published benchmark files: every format becomes a list of :class:`Problem` records.

Implements the format facts of ``book/data-formats.md`` (FLD v0.2 / FLDx2, FOLIO v0.0 / v2 / Logic-LM,
Multi-LogiEval, ProntoQA's Logic-LM dev set, LogicMark, the paper's merged evaluation JSON).

One module per format (``fld``, ``folio``, ``multi_logieval``, ``prontoqa``, ``logicmark``,
``paper_eval``), each ending in a :class:`~finelogic.data.loaders.records.Format`; :data:`FORMATS` below
registers them. A new dataset is one module plus one line in :data:`FORMATS`.

Where the files come from, in order (:mod:`finelogic.data.loaders.files`):

1. ``path`` (a file, a dataset folder such as ``<dir>/folio``, or a root folder in the published layout);
2. ``$FINELOGIC_DATA_DIR`` in the published layout;
3. when ``$FINELOGIC_DATA_DIR`` is not set and the network is reachable: FOLIO, Multi-LogiEval and
   ProntoQA downloaded once from their public homes at pinned commits, SHA-256 checked, into
   ``$FINELOGIC_CACHE/data`` (:mod:`finelogic.data.loaders.remote`);
4. the Hugging Face hub through ``datasets.load_dataset`` (FLD, FOLIO v2, LogicMark), only when online:
   never with ``FINELOGIC_OFFLINE=1``, ``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set;
5. otherwise :class:`DataNotFoundError`, which says which files to put where.

Errors. A malformed file or item raises :class:`DatasetFormatError` naming the file, the line (JSONL) or
item index/id, and the field, e.g. ``.../folio-validation.jsonl line 17: missing field 'conclusion'``.
With ``strict=False`` bad items (and unreadable files) are skipped instead, but never silently: the result
is a :class:`LoadedDataset` whose ``.skipped`` lists ``(location, reason)`` pairs, and one warning per
load summarises the counts by reason.

Checks against silently wrong data: ``$FINELOGIC_DATA_DIR`` naming no folder raises
:class:`DataDirError`; a published file whose item count differs from its documented one (FOLIO 204/203,
ProntoQA 500, each Multi-LogiEval rule file, the paper's merged files 203/390/500) and a selection of
Multi-LogiEval's published files with some missing are errors (``strict=False``: reported in ``.skipped``
or warned); a UTF-8 file with a stray byte of another encoding is an error naming the byte's offset; a
folder, FIFO, socket, dangling or looping symbolic link where a file is expected, or a file present but
unreadable, is an error naming it (:func:`~finelogic.data.loaders.records.data_file`), never a fall-back to
the next candidate file or to a stand-in; two items with one id, a ``NaN`` or ``Infinity`` anywhere, JSON
nested thousands deep and strings over a million characters are errors naming the file and item.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Sequence

from finelogic.data.loaders import fld, folio, logicmark, multi_logieval, paper_eval, prontoqa, remote
from finelogic.data.loaders.files import OFFLINE_ENV_VARS, dataset_folder, default_root, from_hub, hub_allowed
from finelogic.data.loaders.fld import fld_problem
from finelogic.data.loaders.logicmark import logicmark_problem
from finelogic.data.loaders.multi_logieval import MULTI_LOGIEVAL_LOGIC_TYPES, PAPER_MULTI_LOGIEVAL_DEPTHS
from finelogic.data.loaders.paper_eval import infer_paper_dataset
from finelogic.data.loaders.records import (
    DataDirError,
    DataNotFoundError,
    DatasetFormatError,
    Format,
    LoadedDataset,
    data_file,
    load_files,
    present,
    read_text,
    split_sentences,
)

log = logging.getLogger(__name__)

# The registry: dataset name -> how its files are found and read. One line per dataset.
FORMATS: dict[str, Format] = {
    "fld": fld.FORMAT,
    "folio": folio.FORMAT,
    "multi_logieval": multi_logieval.FORMAT,
    "prontoqa": prontoqa.FORMAT,
    "logicmark": logicmark.FORMAT,
    "paper_eval": paper_eval.FORMAT,
}
DATASETS = tuple(FORMATS)

__all__ = [
    "FORMATS", "DATASETS", "DataDirError", "DataNotFoundError", "DatasetFormatError", "LoadedDataset", "load_dataset",
    "load_multi_logieval", "fld_problem", "logicmark_problem", "infer_paper_dataset", "split_sentences",
    "read_text", "OFFLINE_ENV_VARS",
]


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
            default ``$FINELOGIC_DATA_DIR``, then the pinned public copies, then the Hugging Face hub.
        split: file/split selector (``validation``, ``train``, ``dev``, ``test``...); default per dataset.
        strict: raise :class:`DatasetFormatError` on the first bad item (default) or skip and report it
            in ``.skipped``.
        **options: ``multi_logieval`` only: ``depths`` (default (4, 5), the paper's) and ``logic_types``
            (default ``("fol", "pl", "nm")``): 390 items.

    Returns:
        A :class:`LoadedDataset` (a list of Problems with ``.skipped``), in file order.
    """
    if name not in FORMATS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {DATASETS}")
    fmt = FORMATS[name]
    unknown = set(options) - set(fmt.options)
    if unknown:
        raise TypeError(f"load_dataset({name!r}) takes no options {sorted(unknown)}")
    base = Path(path).expanduser() if path is not None else default_root()
    if path is not None and present(base) and not base.is_dir():
        data_file(base)  # a FIFO, socket, dangling or looping link given as the file: named, never read
    if path is not None and not base.exists():
        raise DataNotFoundError(f"{base}: no such file or folder (expected {fmt.where})")
    if base is not None:
        try:
            files = _local_files(name, fmt, base, split, options)
        except DataNotFoundError as error:
            if path is not None:
                raise
            raise DataNotFoundError(f"{error} ($FINELOGIC_DATA_DIR = {base})") from None
        if files:
            log.info("loading %s from %s", name, ", ".join(map(str, files)))
            _check_complete(name, fmt, files, strict, options)
            return load_files(files, fmt.convert, strict, fmt.read, fmt.counts)
        if path is not None:
            raise DataNotFoundError(f"no {name} files in {base}: expected {fmt.where}")
    if base is None and name in remote.SOURCES:
        root = remote.fetched_root(name)  # None when offline (said once) or the fetch failed (logged)
        files = _local_files(name, fmt, root, split, options) if root is not None else []
        if files:
            log.info("loading %s from %s (fetched from %s)", name, root, remote.SOURCES[name].home)
            _check_complete(name, fmt, files, strict, options)
            return load_files(files, fmt.convert, strict, fmt.read, fmt.counts)
    if fmt.hub_id and hub_allowed():
        return from_hub(fmt.hub_id, split or fmt.hub_split, fmt.convert, strict)
    why = (f"{'/'.join(('FINELOGIC_OFFLINE',) + OFFLINE_ENV_VARS)} is set" if remote.env_offline()
           else "huggingface.co is not reachable")
    hub = f"; the hub copy {fmt.hub_id} was not tried because {why}" if fmt.hub_id else ""
    raise DataNotFoundError(
        f"no local files for {name!r}: put {fmt.where} under $FINELOGIC_DATA_DIR "
        f"(now {os.environ.get('FINELOGIC_DATA_DIR', 'unset')}) or pass path=...{hub}"
    )


def _check_complete(name: str, fmt: Format, files: list[Path], strict: bool, options: dict[str, Any]) -> None:
    """A selection of published files with some missing is an error (``strict=False``: a warning)."""
    absent = fmt.missing(files, **options) if fmt.missing and len(files) > 1 else []
    if absent:
        message = (f"{name}: {len(absent)} published file(s) missing, so fewer items than documented: "
                   f"{', '.join(absent)}")
        if strict:
            raise DataNotFoundError(message)
        log.warning("%s (strict=False: loading the rest)", message)


def _local_files(name: str, fmt: Format, base: Path, split: str | None, options: dict[str, Any]) -> list[Path]:
    """The files of ``name`` under ``base`` (a file, a dataset folder or a root in the published layout)."""
    if base.is_file():
        return [base]
    folder = dataset_folder(base, name, FORMATS)
    return fmt.find(folder, split, **options) if folder is not None else []


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
    if present(base) and not base.is_dir():
        data_file(base)
    multi_logieval.check_logic_types(logic_types)
    fmt = FORMATS["multi_logieval"]
    files = [base] if base.is_file() else fmt.find(base, depths=depths, logic_types=logic_types)
    if len(files) > 1:
        _check_complete("multi_logieval", fmt, files, strict, {"depths": depths, "logic_types": logic_types})
    return load_files(files, fmt.convert, strict, fmt.read, fmt.counts)
