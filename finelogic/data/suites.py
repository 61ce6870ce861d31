"""The paper's four test sets as a profile asks for them: real files where present (:func:`load_dataset`),
generated stand-ins where the paper itself generated (FLD) or a faithful generator exists (ProntoQA); FOLIO
and Multi-LogiEval without their files are reported as not present, never faked. A data folder (``data_dir``
or ``$FINELOGIC_DATA_DIR``) holds every real test set: a file missing there stops the run, naming it.
"""
from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from finelogic.data.datasets import TEST_SETS, DataNotFoundError, dataset, default_root, load_dataset
from finelogic.data.problem import Problem
from finelogic.data.stored import generate_stored

log = logging.getLogger(__name__)

#: The paper's names for the four test sets (Table 1 / Table 2 columns), by dataset key.
PAPER_NAMES = {d.name: d.paper_name for d in TEST_SETS}
#: The test sets read from their published files (FLD's is generated), which ``limit`` may name.
REAL_SETS = tuple(d.name for d in TEST_SETS if d.source is not None)


@dataclass(frozen=True)
class FLDSet:
    """Which FLD-style test set to generate (:func:`finelogic.data.generate`'s ``fld`` or ``fld_paper_test``)."""

    name: str = "fld_paper_test"
    n: int | None = None
    depths: tuple[int, ...] | None = None
    scale: float | None = None

    def kwargs(self) -> dict[str, Any]:
        """The generator's keyword arguments (the ones set)."""
        return {k: v for k, v in (("n", self.n), ("depths", self.depths), ("scale", self.scale)) if v is not None}


@dataclass(frozen=True)
class ProntoQASet:
    """The generated ProntoQA set: the stand-in for an absent ``prontoqa/dev.json``, or with ``always`` the set
    evaluated even beside it (e.g. the 3-hop problems the supervision styles train on)."""

    n: int = 0
    hops: tuple[int, ...] = (5,)
    always: bool = False


@dataclass(frozen=True)
class TestSets:
    """The four test sets a run evaluates on (:func:`evaluation_sets`)."""

    fld: FLDSet = FLDSet()
    prontoqa_generated: ProntoQASet = ProntoQASet()
    limit: int | Mapping[str, int | None] | None = None  # items per real dataset: one for all, or by name
    first_fraction: float | None = None  # keep the first ceil(first_fraction x n) items of each set

    def __post_init__(self) -> None:
        if isinstance(self.limit, Mapping):
            unknown = sorted(set(self.limit) - set(REAL_SETS))
            if unknown:
                raise ValueError(f"limit: unknown dataset {unknown[0]!r}; the real test sets are "
                                 f"{', '.join(REAL_SETS)}")
        if self.first_fraction is not None and not 0 < self.first_fraction <= 1:
            raise ValueError(f"first_fraction must be in (0, 1], got {self.first_fraction!r}")


@dataclass(frozen=True)
class EvalSet:
    """One test set as a run uses it: ``problems`` empty when not present, ``source`` for captions."""

    name: str
    problems: tuple[Problem, ...]
    source: str
    generated: bool

    @property
    def paper_name(self) -> str:
        return dataset(self.name).paper_name

    @property
    def present(self) -> bool:
        return bool(self.problems)


def _real(name: str, base: Path | None, limit: int | None, seed: int) -> EvalSet | None:
    """The real files under ``base``, a :class:`DataNotFoundError` naming the missing one; without a base, the
    pinned public copies when online (fetched once), else None."""
    try:
        problems = load_dataset(name, path=base)
    except DataNotFoundError as error:
        if base is not None:
            raise DataNotFoundError(f"{error}. The data folder {base} must hold every real test set "
                                    f"({', '.join(REAL_SETS)}): put the file there, or run without a data folder "
                                    "(no --data-dir, FINELOGIC_DATA_DIR unset) to use the published copies or "
                                    "labelled stand-ins") from None
        log.info("%s: %s", name, error)  # offline or not fetched: remote said so; the run labels what it uses
        return None
    if base is not None:
        source = f"real files under {base}"
    else:
        pinned = dataset(name).source
        source = f"published files fetched from {pinned.home}" if pinned is not None else "hub"
    if limit is not None and limit < len(problems):  # a deterministic, order-preserving sample
        keep = set(random.Random(seed).sample(range(len(problems)), limit))
        problems = [p for i, p in enumerate(problems) if i in keep]
    return EvalSet(name, tuple(problems), source, generated=False)


def _prontoqa_stand_in(wanted: ProntoQASet, seed: int) -> EvalSet:
    """The generated ProntoQA set: the stand-in for the real file, or (``always``) chosen over it."""
    problems = generate_stored("prontoqa", seed=seed, n=wanted.n, hops=wanted.hops)
    what = (f"generated (finelogic ProntoQA-style generator, {'/'.join(map(str, wanted.hops))}-hop, chosen over the "
            "real file)" if wanted.always else "generated stand-in (finelogic ProntoQA-style generator)")
    return EvalSet("prontoqa", tuple(problems), what, generated=True)


def evaluation_sets(settings: TestSets | Mapping[str, Any], seed: int = 0,
                    data_dir: str | Path | None = None) -> list[EvalSet]:
    """The four test sets for one family's config: a :class:`TestSets` or the same as plain data (a run's
    recorded settings; other keys ignored). Generated sets are kept in the store (:mod:`finelogic.data.stored`);
    ``data_dir`` defaults to ``$FINELOGIC_DATA_DIR``."""
    if not isinstance(settings, TestSets):
        from finelogic.typed_config import build

        wanted = {k: settings[k] for k in ("fld", "prontoqa_generated", "limit", "first_fraction") if k in settings}
        settings = build(TestSets, wanted, "test sets")
    base = Path(data_dir) if data_dir else default_root()
    fld_name = settings.fld.name
    fld = generate_stored(fld_name, seed=seed, **settings.fld.kwargs())
    sets = [EvalSet("fld", tuple(fld), f"generated ({fld_name}, finelogic FLD-style generator)", generated=True)]
    generated_only = settings.prontoqa_generated.always
    for name in REAL_SETS:  # without files, FOLIO and Multi-LogiEval are not present; ProntoQA is generated
        limit = settings.limit.get(name) if isinstance(settings.limit, Mapping) else settings.limit
        real = None if name == "prontoqa" and generated_only else _real(name, base, limit, seed)
        sets.append(real or (_prontoqa_stand_in(settings.prontoqa_generated, seed) if name == "prontoqa"
                             else EvalSet(name, (), "not present", generated=False)))
    fraction = settings.first_fraction
    if fraction is not None:
        sets = [replace(s, problems=s.problems[:math.ceil(fraction * len(s.problems))]) for s in sets]
    for s in sets:
        log.info("%s: %d items from %s", s.paper_name, len(s.problems), s.source)
    return sets
