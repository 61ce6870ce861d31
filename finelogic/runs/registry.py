"""The notebook families, declared once in :data:`FAMILIES`, which everything that iterates over families
imports (the papermill runner, the ``finelogic`` command); :func:`family` turns a name typed by a user into
its record. Adding a family is one module in ``finelogic/runs/`` (``FAMILY``, ``run``, a
:class:`~finelogic.runs.results.Run` subclass), one :class:`Family` entry here, one notebook and one ``_toc.yml``
entry (``tests/test_registry.py`` does this with a toy family).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Sequence

from finelogic.runs import accuracy, claims, datasets, depth, logicmark, probing, soundness, supervision
from finelogic.runs.results import Run


@dataclass(frozen=True)
class Family:
    """One notebook family: its ``finelogic.runs`` module, its notebook's stem in ``notebooks/``, the
    ``config_name`` it reads (its errors' path), ``upstream`` families whose runs ``run`` takes as ``<name>_run`` (the same
    in every profile), and its notebook's ``minutes`` in the tiny book (2 cores; the runner starts the longest
    first when no timings are known)."""

    module: ModuleType
    notebook: str
    run_type: type[Run]
    config_name: str
    upstream: tuple[str, ...] = ()
    minutes: float = 0.0

    @property
    def name(self) -> str:
        """Its name: the result folder ``results/<profile>/<name>``."""
        return self.module.FAMILY

    @property
    def run(self) -> Callable[..., Run]:
        return self.module.run



#: Every upstream family comes first: supervision, whose checkpoints the evaluation families evaluate, before
#: them (the book's reading order is ``_toc.yml``'s).
FAMILIES: tuple[Family, ...] = (
    Family(datasets, "01_datasets", datasets.DatasetsRun, "datasets", minutes=0.2),
    Family(supervision, "06_supervision", supervision.SupervisionRun, supervision.CONFIG_NAME, minutes=4.2),
    Family(accuracy, "02_accuracy", accuracy.AccuracyRun, "accuracy", upstream=(supervision.FAMILY,), minutes=12.9),
    Family(depth, "03_depth", depth.DepthRun, "accuracy", upstream=(accuracy.FAMILY,), minutes=0.2),
    Family(soundness, "04_soundness", soundness.SoundnessRun, "soundness", upstream=(accuracy.FAMILY,), minutes=0.7),
    Family(probing, "05_probing", probing.ProbingRun, "probing", upstream=(supervision.FAMILY,), minutes=9.2),
    Family(logicmark, "07_logicmark", logicmark.LogicMarkRun, "logicmark", minutes=5.1),
    Family(claims, "08_claims", claims.ClaimsRun, claims.FAMILY, upstream=claims.UPSTREAM, minutes=0.1),
)


def names(families: Sequence[Family] = FAMILIES) -> tuple[str, ...]:
    return tuple(f.name for f in families)


def family(name: str, families: Sequence[Family] = FAMILIES) -> Family:
    """The family called ``name`` (or whose notebook is ``name``); a ValueError listing the names otherwise."""
    for entry in families:
        if name in (entry.name, entry.notebook):
            return entry
    raise ValueError(f"unknown notebook family {name!r}; the families are {', '.join(names(families))}")


def ordered(chosen: Sequence[str] | None = None, families: Sequence[Family] = FAMILIES) -> list[Family]:
    """The families named in ``chosen`` (default all), in :data:`FAMILIES` order, each after its upstream."""
    picked = [family(n, families) for n in chosen] if chosen is not None else list(families)
    return [f for f in families if f in picked]
