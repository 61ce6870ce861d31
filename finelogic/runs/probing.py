"""Table 4 (paper §3.3, Appendix B), behind ``notebooks/05_probing.ipynb``: the CSS / RFI / NSD rows of generated
FLD-style problems (:mod:`finelogic.eval.probing_data`), each row's hidden state in every model, and the paper's
probe per task beside the majority-class and text-only baselines (:mod:`finelogic.eval.probing`).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from finelogic.data.problem import Problem
from finelogic.eval.probing import PREDICTION_COLUMNS, TEXT_ONLY, extract_features, probe_predictions, summarize
from finelogic.eval.probing_data import (TASKS, ProbeRow, Readout, build_rows, probing_problems, row_counts,
                                         shown_rows, split_problems)
from finelogic.eval.probing import predictions_problem
from finelogic.eval.probing_data import kept_problem
from finelogic.memo import Memo, source_version
from finelogic.models.base import backend_template
from finelogic.runs.backends import open_models, parse_model_list, release, set_threads
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Recording, call_counts
from finelogic.runs.results import JSON, Codec, Run, kept
from finelogic.runs.supervision import SupervisionRun

log = logging.getLogger(__name__)

#: The splits' problems as written with a run.
SPLITS = Codec("splits", lambda splits: json.dumps({k: [p.to_dict() for p in v] for k, v in splits.items()},
                                                   ensure_ascii=False),
               lambda text: {k: [Problem.from_dict(d) for d in v] for k, v in json.loads(text).items()})
#: Probing rows as written with a run (their fields).
ROWS = Codec("probing rows", lambda rows: json.dumps([dataclasses.asdict(r) for r in rows], ensure_ascii=False),
             lambda text: tuple(ProbeRow(**d) for d in json.loads(text)))

FAMILY = "probing"
#: Row labels of the two default models.
EMBEDDED = "SmolLM2-135M-Instruct"
RANDOM_INIT = "SmolLM2-135M (random init)"
#: Sequences per forward call for every probed model.
BATCH_SIZE = 8


@dataclass(frozen=True)
class ProbingConfig:
    """The probing family's config (Appendix B): ``distractors`` (min, max) distractor facts;
    ``nsd_points`` next-step-derivability points per problem; ``readouts`` ``chat`` and/or ``plain`` of hidden
    ``layer`` (-1: last); ``models`` as :func:`model_entry` reads them; ``sft_checkpoints``: fine-tuned
    checkpoint folders probed beside them (the supervision run's are handed to :func:`run`)."""

    n_train: int = 60
    n_test: int = 30
    depths: tuple[int, ...] = (4, 5, 6)
    distractors: tuple[int, ...] = (4, 6)
    nsd_points: int = 1
    readouts: tuple[str, ...] = ("chat",)
    layer: int = -1
    models: tuple[Any, ...] = ("embedded", "random-init")
    sft_checkpoints: tuple[str, ...] = ()
    threads: int | None = None
    progress: bool | None = None

    def __post_init__(self) -> None:
        wrong = [r for r in self.readouts if r not in ("chat", "plain")]
        if wrong:
            raise ValueError(f"readouts: unknown read-out {wrong[0]!r}; choose chat or plain")


#: The family's config per profile. tiny: depths 4-6 give gold proofs of 4-8 steps; 60 train / 30 test
#: problems give intervals narrow enough to tell a probe from the text-only baseline. paper: Appendix B.
PROFILES = {
    "smoke": ProbingConfig(n_train=4, n_test=2, depths=(3, 4), distractors=(4, 6), nsd_points=1, readouts=("plain",)),
    "tiny": ProbingConfig(n_train=60, n_test=30, depths=(4, 5, 6), distractors=(4, 6), nsd_points=1),
    # The study: the base model, its random-init control and every fine-tuned model of the study.
    "study": ProbingConfig(n_train=60, n_test=30, depths=(4, 5, 6), distractors=(4, 6), nsd_points=1),
    "paper": ProbingConfig(n_train=450, n_test=100, depths=tuple(range(10, 20)), distractors=(4, 8), nsd_points=6,
                             models=({"name": "Llama-3.1-8B-Instruct", "path": "meta-llama/Llama-3.1-8B-Instruct"},
                                     {"name": "Qwen-2.5-7B-Instruct", "path": "Qwen/Qwen2.5-7B-Instruct"},
                                     "embedded", "random-init")),
}


@dataclass(frozen=True)
class ProbingRun(Run):
    """Everything a Table-4 page shows: ``predictions`` (one row per test row, model, read-out and probe),
    their ``summary``, ``row_counts`` (problems, rows and the share of label 1 per task and split; every model
    reads the same rows), one ``shown_rows`` test row per task, and ``rows`` (``(model, readout)`` -> all probing
    rows; live only: megabytes of prompt text)."""

    predictions: pd.DataFrame
    summary: pd.DataFrame
    row_counts: pd.DataFrame = field(default_factory=pd.DataFrame)
    splits: Mapping[str, list[Problem]] = kept(SPLITS, default_factory=dict, repr=False)
    shown_rows: tuple[ProbeRow, ...] = kept(ROWS, default=(), repr=False)
    seconds: Mapping[str, float] = kept(JSON, default_factory=dict)
    rows: Mapping[tuple[str, str], list[ProbeRow]] = field(default_factory=dict, repr=False, compare=False)


def run(profile: str, *, seed: int = 0, backends: Mapping[str, Any] | None = None,
        supervision_run: SupervisionRun | None = None, **overrides: Any) -> ProbingRun:
    """Table 4 for ``profile``: problems, rows, features, probes and their predictions for every model of the
    section and every checkpoint of ``supervision_run`` (when handed in), as Table 4 probes its fine-tuned
    models; ``seed`` draws the problems, rows, CV folds and the random-init control's weights."""
    given = dict(overrides)
    if isinstance(given.get("sft_checkpoints"), str):  # a notebook parameter from the command line
        given["sft_checkpoints"] = parse_model_list(given["sft_checkpoints"])
    config = resolve(PROFILES, profile, FAMILY, given)
    recording = Recording(FAMILY, profile, seed)
    set_threads(config.threads)
    progress = config.progress
    n_train, n_test = config.n_train, config.n_test
    # Problems and NSD lines drawn once, read by every rerun; each probe's test predictions likewise.
    memo = Memo("probing", source_version("finelogic.eval.probing_data"), check=kept_problem)
    problems = probing_problems(n_train + n_test, seed, config.depths, distractors=config.distractors,
                                progress=progress, memo=memo)
    memo.flush()
    probes = Memo("probing-probes", source_version("finelogic.eval.probing"), check=predictions_problem)
    splits = split_problems(problems, n_train, seed)
    entries = [model_entry(e, seed) for e in config.models]
    entries += [checkpoint_entry(p) for p in config.sft_checkpoints]
    if supervision_run is not None:
        entries += [spec for spec, _ in supervision_run.checkpoints()]
    opened = open_models(entries, backends, batch_size=BATCH_SIZE)
    all_rows, tables, seconds = {}, [], {}
    text_only = None
    for spec, backend in opened:
        start = time.perf_counter()
        for readout_name in config.readouts:
            readout = Readout(readout_name, backend.tokenizer if readout_name == "chat" else None)
            rows = [r for task in TASKS
                    for r in build_rows(splits, task, readout, seed, nsd_points=config.nsd_points, memo=memo)]
            memo.flush()
            all_rows[spec.name, readout_name] = rows
            features = extract_features(backend, rows, layer=config.layer, progress=progress)
            # The text-only baseline reads candidate lines and labels, the same for every model: fit once.
            table = probe_predictions(rows, features, seed=seed, text_only=text_only, memo=probes)
            probes.flush()
            text_only = table[table["probe"] == TEXT_ONLY]
            tables.append(table.assign(model=spec.name, readout=readout_name))
        seconds[spec.name] = time.perf_counter() - start
        model_calls, cache_hits = call_counts([backend])
        log.info("probing %s: %.1f s, %d model calls, %d cached", spec.name, seconds[spec.name], model_calls, cache_hits)
        release(backend)  # one model in memory at a time
    predictions = pd.concat(tables, ignore_index=True)[["model", "readout", "probe", *PREDICTION_COLUMNS]]
    depths = config.depths
    data = {"fld (probing)": f"generated, depths {min(depths)}-{max(depths)}, {n_train} train + {n_test} test problems"}
    # The chat read-out frames each text as its model is prompted (a base model: as plain text).
    templates = {spec.name: backend_template(backend) for spec, backend in opened} if "chat" in config.readouts else {}
    provenance = recording.provenance(config, opened=opened, n=len(splits["test"]), data=data, templates=templates)
    first = next(iter(all_rows.values()), [])
    return ProbingRun(provenance, predictions, summarize(predictions, seed=seed).round(4), row_counts=row_counts(first),
                      splits={k: list(v) for k, v in splits.items()}, shown_rows=tuple(shown_rows(first)),
                      seconds=dict(seconds), rows=all_rows)


def model_entry(entry: Any, seed: int) -> Any:
    """A profile's model entry as a spec with Table 4's row labels: ``"embedded"``, ``"random-init"`` (the
    same architecture, weights drawn with ``seed``: the control), ``{"name", "path"}`` (a transformers model
    on ``device_map="auto"``); any other spec as it is."""
    if entry == "embedded":
        return {"kind": "embedded", "name": EMBEDDED}
    if entry == "random-init":
        return {"kind": "random-init", "seed": seed, "name": RANDOM_INIT}
    if isinstance(entry, Mapping) and "kind" not in entry and "path" in entry:
        return {"kind": "hf", "device_map": "auto", "name": str(entry["path"]), **entry}
    return entry


def checkpoint_entry(path: str | Path) -> dict[str, Any]:
    """A local fine-tuned checkpoint as a model entry, its row named by its folder."""
    folder = Path(path).expanduser()
    return {"kind": "ckpt", "path": str(folder), "name": folder.name, "device_map": "auto"}
