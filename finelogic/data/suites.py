"""The paper's four test sets, as a profile asks for them: real files where present, generated
stand-ins where the paper itself generated (FLD) or where a faithful generator exists (ProntoQA).

Real files come from ``$FINELOGIC_DATA_DIR``, or, when it is not set and the network is reachable, from the
datasets' public homes at pinned commits (:mod:`finelogic.data.loaders.remote`). FOLIO and Multi-LogiEval
have no generator here: without their files they are reported as not present, never faked. Used by the datasets (Table 1) and accuracy (Table 2) notebooks.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from finelogic.data.loaders import DataNotFoundError, load_dataset, remote
from finelogic.data.loaders.files import default_root
from finelogic.data.problem import Problem
from finelogic.data.stored import generate_stored

log = logging.getLogger(__name__)

# The paper's names for the four test sets (Table 1 / Table 2 columns) and our dataset keys.
PAPER_NAMES = {"fld": "FLD", "folio": "FOLIO", "multi_logieval": "Multi-LogiEval", "prontoqa": "ProntoQA"}


@dataclass(frozen=True)
class EvalSet:
    """One test set as used by a run.

    Attributes:
        name: dataset key (``fld``, ``folio``, ``multi_logieval``, ``prontoqa``).
        problems: the items (empty when not present).
        source: where they came from, for captions: a file path, ``generated (...)`` or ``not present``.
        generated: True for generated stand-ins.
    """

    name: str
    problems: tuple[Problem, ...]
    source: str
    generated: bool

    @property
    def paper_name(self) -> str:
        return PAPER_NAMES[self.name]

    @property
    def present(self) -> bool:
        return bool(self.problems)


def _real(name: str, base: Path | None, limit: int | None, seed: int) -> EvalSet | None:
    """The real files under ``base``; without a base, the pinned public copies when online (fetched once)."""
    try:
        problems = load_dataset(name, path=base)
    except DataNotFoundError as error:
        log.info("%s: %s", name, error)
        return None
    if base is not None:
        source = f"real files under {base}"
    else:
        source = f"published files fetched from {remote.SOURCES[name].home}" if name in remote.SOURCES else "hub"
    problems = _subsample(list(problems), limit, seed)
    return EvalSet(name, tuple(problems), source, generated=False)


def _limit(limit: int | Mapping[str, int | None] | None, name: str) -> int | None:
    """``limit`` for one dataset: one number for all, or a mapping by dataset name (missing = all)."""
    return limit.get(name) if isinstance(limit, Mapping) else limit


def _subsample(problems: list[Problem], limit: int | None, seed: int) -> list[Problem]:
    """A deterministic, order-preserving sample of ``limit`` items (all when limit is None)."""
    import random

    if limit is None or limit >= len(problems):
        return problems
    keep = set(random.Random(seed).sample(range(len(problems)), limit))
    return [p for i, p in enumerate(problems) if i in keep]


def evaluation_sets(settings: Mapping[str, Any], seed: int = 0, data_dir: str | Path | None = None) -> list[EvalSet]:
    """The four test sets for one profile section.

    Args:
        settings: the profile's section, with keys ``fld`` (keyword arguments for
            :func:`finelogic.data.generate`, e.g. ``{"name": "fld_paper_test", "scale": 0.1}``),
            ``prontoqa_generated`` (kwargs for the ProntoQA stand-in), ``limit`` (max items per real
            dataset, None = all; or a mapping such as ``{"folio": 4, "prontoqa": 2}``) and the optional
            ``first_fraction`` (keep the first ceil(first_fraction x n) items of each set, e.g. 0.01 for
            a rehearsal's real slice; None or absent = all). Generated sets are stored on disk and read
            back on later calls (:mod:`finelogic.data.stored`).
        seed: seeds generation and subsampling.
        data_dir: real files in the published layout; default ``$FINELOGIC_DATA_DIR`` (an error when
            it names no folder).
    """
    base = Path(data_dir) if data_dir else default_root()
    limit = settings.get("limit")
    fld_kwargs = dict(settings["fld"])
    fld_name = fld_kwargs.pop("name")
    fld = generate_stored(fld_name, seed=seed, **fld_kwargs)
    sets = [EvalSet("fld", tuple(fld), f"generated ({fld_name}, finelogic FLD-style generator)", generated=True)]
    for name in ("folio", "multi_logieval"):
        sets.append(_real(name, base, _limit(limit, name), seed) or EvalSet(name, (), "not present", generated=False))
    prontoqa = _real("prontoqa", base, _limit(limit, "prontoqa"), seed)
    if prontoqa is None:
        kwargs = dict(settings["prontoqa_generated"])
        problems = generate_stored("prontoqa", seed=seed, **kwargs)
        prontoqa = EvalSet("prontoqa", tuple(problems), "generated stand-in (finelogic ProntoQA-style generator)",
                           generated=True)
    sets.append(prontoqa)
    fraction = settings.get("first_fraction")
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise ValueError(f"first_fraction must be in (0, 1], got {fraction!r}")
        sets = [replace(s, problems=s.problems[:math.ceil(fraction * len(s.problems))]) for s in sets]
    for s in sets:
        log.info("%s: %d items from %s", s.paper_name, len(s.problems), s.source)
    return sets
