"""The laptop-scale study (profile ``study``; book/reproduce.md) in units that each finish and are committed
on their own: ``base`` (the base model's accuracy records and probing rows, with its random-init control) and
one ``SFT-<style>`` per style of the ``sft`` config (that style's training, then its fine-tuned model's
accuracy records and probing rows).

:func:`run_unit` writes a unit's family runs to ``results/study/units/<unit>/<family>/``, then ``unit.json``
(:class:`UnitRecord`; a unit without it is not done). :func:`assemble` merges the units made with the
profile's current settings into the study's runs and derives the rest; a finding whose evidence needs a unit
not yet run is "not testable here" on the claims page. ``finelogic study`` (:func:`run_study`) runs the units
not yet done, assembling after each.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import pandas as pd

from finelogic.config import repo_root, results_dir
from finelogic.eval.probing import summarize as summarize_probes
from finelogic.files import write_text_atomic
from finelogic.runs import accuracy, claims, depth, probing, registry, soundness, supervision
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Provenance, git_commit
from finelogic.runs.results import Run
from finelogic.runs.upstream import differing_config

log = logging.getLogger(__name__)

PROFILE = "study"
BASE = "base"
UNIT_FILE = "unit.json"
MANIFEST = "units.csv"
#: The unit's families, in the order it runs them (the base unit trains nothing).
UNIT_FAMILIES = (supervision.FAMILY, accuracy.FAMILY, probing.FAMILY)
#: Seconds between load-average samples while a unit runs.
LOAD_EVERY = 15.0


class UnitError(ValueError):
    """A unit that cannot be assembled; the message names the unit, what differs and the command that remakes it."""


def unit_names(profile: str = PROFILE) -> tuple[str, ...]:
    """The study's units in the order ``finelogic study`` runs them: the base model, then one per style."""
    return (BASE, *(f"SFT-{style}" for style in supervision.PROFILES[profile].styles))


def units_dir(profile: str = PROFILE) -> Path:
    return results_dir(profile) / "units"


def unit_overrides(unit: str, profile: str = PROFILE) -> dict[str, dict[str, Any]]:
    """What the unit changes in each family's profile settings: the base unit trains nothing and evaluates
    and probes the profile's models; a style's unit trains that style and evaluates and probes its
    fine-tuned model only (``models`` empty)."""
    if unit == BASE:  # it decodes no fine-tuned model: their decoding is not its setting
        return {accuracy.FAMILY: {"fine_tuned_generation": {}}, probing.FAMILY: {}}
    style = unit.removeprefix("SFT-")
    if not unit.startswith("SFT-") or style not in supervision.PROFILES[profile].styles:
        raise ValueError(f"unknown study unit {unit!r}; the units are {', '.join(unit_names(profile))}")
    return {supervision.FAMILY: {"styles": (style,), "logipt": False},
            accuracy.FAMILY: {"models": ()},
            probing.FAMILY: {"models": ()}}


@dataclass(frozen=True)
class UnitRecord:
    """``unit.json``: how a unit was made (the manifest's row): commit, start and end time, seconds per
    stage, the 1-minute load average sampled while it ran, torch threads."""

    unit: str
    profile: str
    seed: int
    commit: str
    started: str
    finished: str
    seconds: float
    stages: Mapping[str, float]
    load_mean: float
    load_max: float
    load_samples: int
    threads: int
    families: tuple[str, ...]


@contextlib.contextmanager
def _load_samples() -> Iterator[list[float]]:
    """The 1-minute load average, sampled every :data:`LOAD_EVERY` seconds while the block runs and at its end."""
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while True:
            samples.append(os.getloadavg()[0])
            if stop.wait(LOAD_EVERY):
                return

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join()
        samples.append(os.getloadavg()[0])


def done_units(profile: str = PROFILE, root: str | Path | None = None) -> dict[str, UnitRecord]:
    """The units whose ``unit.json`` is written, by name, in :func:`unit_names` order (then any others)."""
    root = Path(root or units_dir(profile))
    found = {}
    for path in sorted(root.glob(f"*/{UNIT_FILE}")) if root.is_dir() else ():
        data = json.loads(path.read_text(encoding="utf-8"))
        data["families"] = tuple(data["families"])
        found[data["unit"]] = UnitRecord(**data)
    order = {name: i for i, name in enumerate(unit_names(profile))}
    return dict(sorted(found.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def run_unit(unit: str, *, profile: str = PROFILE, seed: int = 0, data_dir: str | Path | None = None,
             root: str | Path | None = None) -> UnitRecord:
    """Run one unit (ValueError for a name not in :func:`unit_names`) and write it to ``root``; its record."""
    given = unit_overrides(unit, profile)
    directory = Path(root or units_dir(profile)) / unit
    # The checkout's commit is read before anything is deleted or written: remaking a committed unit
    # (``--again``) removes its tracked files, which must not make the unit's own provenance read ``+dirty``.
    commit = git_commit()
    (directory / UNIT_FILE).unlink(missing_ok=True)  # not done until written again
    stages: dict[str, float] = {}
    started, clock = _now(), time.perf_counter()

    def stage(family: str, call: Callable[[], Run]) -> Run:
        log.info("study unit %s: %s", unit, family)
        start = time.perf_counter()
        result = call()
        stages[family] = round(time.perf_counter() - start, 1)
        result.write(directory / family)
        return result

    with _load_samples() as load:
        tuned = None  # the base unit trains nothing: its families get no checkpoints
        if supervision.FAMILY in given:
            tuned = stage(supervision.FAMILY, lambda: supervision.run(profile, seed=seed, **given[supervision.FAMILY]))
        stage(accuracy.FAMILY, lambda: accuracy.run(profile, seed=seed, data_dir=data_dir, supervision_run=tuned,
                                                    **given[accuracy.FAMILY]))
        stage(probing.FAMILY, lambda: probing.run(profile, seed=seed, supervision_run=tuned,
                                                  **given[probing.FAMILY]))
    import torch

    record = UnitRecord(unit=unit, profile=profile, seed=seed, commit=commit, started=started,
                        finished=_now(), seconds=round(time.perf_counter() - clock, 1), stages=stages,
                        load_mean=round(sum(load) / len(load), 2), load_max=round(max(load), 2),
                        load_samples=len(load), threads=torch.get_num_threads(), families=tuple(stages))
    (directory / UNIT_FILE).write_text(json.dumps(record.__dict__, indent=2, default=list) + "\n", encoding="utf-8")
    log.info("study unit %s done in %.0f s (load %.1f mean, %.1f max)", unit, record.seconds, record.load_mean,
             record.load_max)
    return record


@dataclass(frozen=True)
class Study:
    """The assembled study: the merged and derived runs by family, the units it holds and those missing."""

    runs: Mapping[str, Run]
    units: pd.DataFrame
    missing: tuple[str, ...]
    #: The done units made with another config than the profile's now, with why (not in ``runs``).
    left_out: Mapping[str, str] = field(default_factory=dict)


def assemble(profile: str = PROFILE, *, seed: int = 0, overrides: Mapping[str, Mapping[str, Any]] | None = None,
             root: str | Path | None = None, out: str | Path | None = None) -> Study:
    """Merge the units done into the study's supervision, accuracy and probing runs, run depth, soundness and
    claims on them, and write all to ``out`` (default ``results/<profile>``) with ``units.csv``. ``overrides``:
    per family, settings beyond the profile's that the units must have been made with.

    A unit made with another seed or another config is left out with a warning naming what differs and the
    command that makes it again (``units.csv``: ``in_study`` false, that reason). :class:`UnitError` when no
    unit is done or none is current."""
    root = Path(root or units_dir(profile))
    records = done_units(profile, root)
    if not records:
        raise UnitError(f"no study unit is done in {root}; run `finelogic study` first")
    read, left_out = current_units(profile, seed=seed, overrides=overrides, root=root)
    for why in left_out.values():
        log.warning("left out of the study: %s", why)
    if not read:
        raise UnitError("no study unit was made with the profile's current config: " + "; ".join(left_out.values()))
    tuned_units = [u for u in read if u != BASE]
    # Without the base unit the study still assembles: the comparisons with the base model are not testable.
    base_name = (read[BASE][accuracy.FAMILY].provenance.models[0] if BASE in read
                 else read[tuned_units[0]][supervision.FAMILY].base.name)
    merged_sup = merge_supervision([read[u][supervision.FAMILY] for u in tuned_units], base_name, profile, seed,
                                   overrides)
    merged_acc = merge_accuracy([read[u][accuracy.FAMILY] for u in read], profile, seed, overrides)
    merged_prob = merge_probing([read[u][probing.FAMILY] for u in read], profile, seed, overrides)
    depth_run = depth.run(profile, seed=seed, accuracy_run=merged_acc)
    soundness_run = soundness.run(profile, seed=seed, accuracy_run=merged_acc,
                                  **(overrides or {}).get(soundness.FAMILY, {}))
    claims_run = claims.run(profile, seed=seed, supervision_run=merged_sup, probing_run=merged_prob,
                            accuracy_run=merged_acc, soundness_run=soundness_run)
    runs = {supervision.FAMILY: merged_sup, accuracy.FAMILY: merged_acc, depth.FAMILY: depth_run,
            soundness.FAMILY: soundness_run, probing.FAMILY: merged_prob, claims.FAMILY: claims_run}
    # The manifest is committed: its reasons name the unit folders from the study's own folder, not this machine's.
    units = pd.DataFrame([{**rec.__dict__, "stages": json.dumps(dict(rec.stages), sort_keys=True),
                           "families": " ".join(rec.families), "in_study": unit in read,
                           "left_out": left_out.get(unit, "").replace(str(Path(root).resolve()), Path(root).name)}
                          for unit, rec in records.items()])
    missing = tuple(u for u in unit_names(profile) if u not in read)
    folder = Path(out) if out is not None else results_dir(profile)
    for family, made in runs.items():
        made.write(folder / family)
    write_text_atomic(folder / MANIFEST, units.to_csv(index=False))
    return Study(runs, units, missing, left_out)


def current_units(profile: str = PROFILE, *, seed: int = 0, overrides: Mapping[str, Mapping[str, Any]] | None = None,
                  root: str | Path | None = None) -> tuple[dict[str, dict[str, Run]], dict[str, str]]:
    """The done units made with the profile's current config (their family runs, by unit) and, for every
    other done unit, why it is not current (what differs and the command that makes it again)."""
    root = Path(root or units_dir(profile))
    read, left_out = {}, {}
    for unit, rec in done_units(profile, root).items():
        try:
            read[unit] = _read_unit(root / unit, rec, profile, seed, overrides)
        except UnitError as why:
            left_out[unit] = str(why)
    return read, left_out


def merge_accuracy(runs: Sequence[accuracy.AccuracyRun], profile: str, seed: int,
                   overrides: Mapping[str, Mapping[str, Any]] | None = None) -> accuracy.AccuracyRun:
    """One accuracy run from the units' (records in unit order; Table 2's cells computed again)."""
    first = runs[0]
    records = pd.concat([r.records for r in runs], ignore_index=True)
    traces = pd.concat([r.traces for r in runs], ignore_index=True)
    provenance = _merged_provenance(runs, accuracy.FAMILY, profile, seed, overrides)
    summary, forced, _ = accuracy.table2(records)
    return accuracy.AccuracyRun(provenance, records=records, sets=first.sets, traces=traces, summary=summary,
                                forced_summary=forced, eval_sets=first.eval_sets)


def merge_probing(runs: Sequence[probing.ProbingRun], profile: str, seed: int,
                  overrides: Mapping[str, Mapping[str, Any]] | None = None) -> probing.ProbingRun:
    """One probing run from the units' (predictions in unit order; the summary computed again). Every unit
    probes the same problems and rows, so the first unit's row counts and shown rows stand for all."""
    first = runs[0]
    predictions = pd.concat([r.predictions for r in runs], ignore_index=True)
    provenance = _merged_provenance(runs, probing.FAMILY, profile, seed, overrides)
    seconds = {name: value for r in runs for name, value in r.seconds.items()}
    return probing.ProbingRun(provenance, predictions, summarize_probes(predictions, seed=seed).round(4),
                              row_counts=first.row_counts, splits=first.splits, shown_rows=first.shown_rows,
                              seconds=seconds)


def merge_supervision(runs: Sequence[supervision.SupervisionRun], base_name: str, profile: str,
                      seed: int, overrides: Mapping[str, Mapping[str, Any]] | None = None
                      ) -> supervision.SupervisionRun:
    """One supervision run from the style units' (training rows, losses, checks and Figure 4 rows of every
    style trained so far)."""
    provenance = _merged_provenance(runs, supervision.FAMILY, profile, seed, overrides)
    if not runs:
        return supervision.SupervisionRun(replace(provenance, models=(base_name,)))
    first = runs[0]
    frames = {name: pd.concat([getattr(r, name) for r in runs], ignore_index=True)
              for name in ("training", "losses", "checks", "figure4")}
    return supervision.SupervisionRun(provenance, **frames, base=first.base, train_config=first.train_config)


def code_changed(commit: str, paths: Sequence[str]) -> bool | None:
    """Whether any of ``paths`` (repository-relative) differs between ``commit`` and the checkout; None when
    it cannot be told (no git, an unknown commit, or a commit with uncommitted changes, ``+dirty``)."""
    if not commit or commit == "unknown" or commit.endswith("+dirty"):
        return None
    try:
        done = subprocess.run(["git", "diff", "--quiet", commit, "--", *paths], cwd=repo_root(),
                              capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: False, 1: True}.get(done.returncode)


_ACCURACY = ("finelogic/runs/accuracy.py", "finelogic/eval", "finelogic/data", "finelogic/models",
             "finelogic/prompts.py", "finelogic/sft")
#: The code each study family's numbers come from (for the book's "code changed since" line).
CODE = {
    supervision.FAMILY: ("finelogic/runs/supervision.py", "finelogic/sft", "finelogic/data", "finelogic/models"),
    accuracy.FAMILY: _ACCURACY,
    depth.FAMILY: ("finelogic/runs/depth.py", *_ACCURACY),
    soundness.FAMILY: ("finelogic/runs/soundness.py", "finelogic/runs/accuracy.py", "finelogic/eval",
                       "finelogic/logic", "finelogic/data", "finelogic/models", "finelogic/sft"),
    probing.FAMILY: ("finelogic/runs/probing.py", "finelogic/eval/probing.py", "finelogic/data", "finelogic/models",
                     "finelogic/sft"),
    claims.FAMILY: ("finelogic/runs/claims.py", *_ACCURACY),
}


def status(profile: str = PROFILE) -> pd.DataFrame:
    """One row per unit: done or not, made with the profile's current config or not (``current``), and for
    the done ones when, at which commit, in how long, at what load."""
    done = done_units(profile)
    _, stale = current_units(profile)
    rows = []
    for unit in unit_names(profile):
        rec = done.get(unit)
        rows.append({"unit": unit, "done": rec is not None, "current": rec is not None and unit not in stale,
                     "commit": rec.commit if rec else "", "finished": rec.finished if rec else "",
                     "minutes": round(rec.seconds / 60, 1) if rec else None,
                     "load_mean": rec.load_mean if rec else None})
    return pd.DataFrame(rows)


def run_study(profile: str = PROFILE, *, units: Sequence[str] | None = None, again: bool = False, seed: int = 0,
              data_dir: str | Path | None = None) -> Study:
    """Run the units not yet done with the profile's current config (or those named; ``again`` reruns done
    ones), assembling after each. A unit made with another config (the profile changed since) is made again."""
    study = None
    for unit in units or unit_names(profile):
        current, stale = current_units(profile, seed=seed)
        if unit in current and not again:
            log.info("study unit %s is done (%s); skipped", unit, units_dir(profile) / unit)
            continue
        if unit in stale:
            log.info("study unit %s is made again: %s", unit, stale[unit])
        run_unit(unit, profile=profile, seed=seed, data_dir=data_dir)
        study = assemble(profile, seed=seed)
    return study if study is not None else assemble(profile, seed=seed)


def _config(family: str, profile: str, overrides: Mapping[str, Any] | None) -> Any:
    """The family's config in ``profile`` with ``overrides`` (its registry entry's ``config_name``)."""
    entry = registry.family(family)
    return resolve(entry.module.PROFILES, profile, entry.config_name, dict(overrides or {}))


def _read_unit(directory: Path, record: UnitRecord, profile: str, seed: int,
               overrides: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Run]:
    """The unit's family runs, each checked against the config the unit must have been made with."""
    again = f"make it again with `finelogic study --units {record.unit} --again`"
    if record.profile != profile or record.seed != seed:
        raise UnitError(f"study unit {record.unit} ({directory}) was made for profile {record.profile}, seed "
                        f"{record.seed}, not {profile}, seed {seed}; {again}")
    given = unit_overrides(record.unit, profile)
    for family, changes in (overrides or {}).items():
        if family in given:
            given[family] = {**changes, **given[family]}
    out = {}
    for family in record.families:
        made = registry.family(family).run_type.read(directory / family)
        config = _config(family, profile, given.get(family))
        wanted = Provenance(family, profile, seed, settings=config).settings
        # A unit made before a setting existed was made with its default.
        defaults = Provenance(family, profile, seed, settings=type(config)()).settings
        # A setting the family no longer has does not change what it makes now.
        differs = [k for k in differing_config(wanted, made.provenance, defaults) if k in wanted]
        if differs:
            raise UnitError(f"study unit {record.unit}: its {family} run ({directory / family}) was made with another "
                            f"config than the profile's now ({', '.join(differs)}); {again}")
        out[family] = made
    return out


def _merged_provenance(runs: Sequence[Run], family: str, profile: str, seed: int,
                       overrides: Mapping[str, Mapping[str, Any]] | None) -> Provenance:
    config = _config(family, profile, (overrides or {}).get(family))
    models = tuple(dict.fromkeys(m for r in runs for m in r.provenance.models))
    ids = tuple(dict.fromkeys(m for r in runs for m in r.provenance.model_ids))
    first = runs[0].provenance if runs else None
    return Provenance(family=family, profile=profile, seed=seed, settings=config, models=models, model_ids=ids,
                      n=first.n if first else 0, data=dict(first.data) if first else {},
                      model_calls=sum(r.provenance.model_calls for r in runs),
                      cache_hits=sum(r.provenance.cache_hits for r in runs),
                      seconds=round(sum(r.provenance.seconds for r in runs), 3))


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
