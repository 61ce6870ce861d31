"""``finelogic eval``: FineLogic's evaluation of your own models in one command.

    finelogic eval --model hf:Qwen/Qwen2.5-0.5B-Instruct --model openai:NAME@http://127.0.0.1:8000/v1

:func:`evaluate` runs the families that test a model (accuracy, Table 2; depth, Table 5; stepwise soundness,
Table 3; probing, Table 4; LogicMark) for the models given, at a profile's sizes, and writes each family's run
to ``<out>/<family>/``; the command then writes ``<out>/report.html`` (:mod:`finelogic.book.report`). The
folder holds one evaluation, named in ``<out>/eval.json``: the same evaluation again replaces it, another one
is refused. What each model can be asked is checked first, in seconds (:func:`capabilities`); a family no
given model can take part in is skipped and the report says why. Every model call goes through the one store
(``$FINELOGIC_CACHE``), so a second call with the same arguments sends only the requests not yet answered.
"""
from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from tqdm import tqdm

from finelogic.config import redact_url, repo_root
from finelogic.files import write_json_atomic
from finelogic.models.base import COMPLETION
from finelogic.models.spec import SERVED, ModelSpec, open_model, parse_model
from finelogic.runs import accuracy, depth, logicmark, probing, soundness
from finelogic.runs.results import Run

log = logging.getLogger(__name__)

#: The families ``finelogic eval`` runs, in order (depth and soundness read the accuracy run).
FAMILIES = (accuracy.FAMILY, depth.FAMILY, soundness.FAMILY, probing.FAMILY, logicmark.FAMILY)
#: Kinds whose hidden states this process can read (probing).
HIDDEN_STATES = ("hf", "embedded", "ckpt", "random-init")
#: The file in an evaluation's folder that says which evaluation the folder holds.
MANIFEST = "eval.json"


#: What the report says of a model without a chat template.
PLAIN_TEXT_NOTE = ("prompted as plain text (the completion layout: the paper's system and user text without chat "
                   "markup, ending with \"Answer:\"), as the model has no chat template")


@dataclass
class Evaluation:
    """What :func:`evaluate` made: the model specs as shown (credentials as ``***``), the family runs, the
    families skipped (and why), where it all is."""

    models: tuple[str, ...]
    profile: str
    out: Path
    runs: dict[str, Run] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def capabilities(spec: ModelSpec) -> tuple[str, str]:
    """Why ``spec`` cannot be asked for log-likelihoods and why not for hidden states ("" where it can). A
    server must answer, take the key and serve the model
    (:meth:`~finelogic.models.openai_backend.OpenAIBackend.check` raises otherwise); log-likelihoods need its
    prompt log-probs to line up with the prompt (:meth:`~finelogic.models.openai_backend.OpenAIBackend.ensure_aligned`);
    hidden states need a model in this process, read off its kind."""
    if spec.kind not in SERVED:
        return "", ("" if spec.kind in HIDDEN_STATES else f"the {spec.kind} kind does not expose hidden states")
    from finelogic.models.openai_backend import LogprobAlignmentError, RequestFailed

    backend = open_model(spec, cache=False)
    backend.check()
    try:
        backend.ensure_aligned()
        loglik = ""
    except (LogprobAlignmentError, RequestFailed) as why:
        loglik = f"its prompt log-probabilities cannot be used ({str(why).splitlines()[0][:200]})"
    return loglik, "a server does not send hidden states"


def evaluate(models: Sequence[str], *, profile: str = "tiny", families: Sequence[str] | None = None,
             out: str | Path | None = None, seed: int = 0, data_dir: str | Path | None = None) -> Evaluation:
    """Run ``families`` (default :data:`FAMILIES`) of ``profile`` for ``models`` (specs of
    :mod:`finelogic.models.spec`) and write their runs to ``out`` (default ``results/eval/<models>-<profile>``).
    Raises ValueError for a spec or family that does not parse or an ``out`` that holds files other than an
    earlier try of the same evaluation, and ServerUnreachable or RequestFailed for a server that cannot be used (all
    before any family runs); DataNotFoundError for a real file ``data_dir`` (default ``$FINELOGIC_DATA_DIR``)
    lacks, before any model is loaded."""
    if not models:
        raise ValueError("give at least one model: --model SPEC (e.g. embedded, hf:NAME, openai:NAME@URL)")
    chosen = list(families or FAMILIES)
    unknown = [f for f in chosen if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {', '.join(map(repr, unknown))}; choose from {', '.join(FAMILIES)}")
    if (depth.FAMILY in chosen or soundness.FAMILY in chosen) and accuracy.FAMILY not in chosen:
        chosen.insert(0, accuracy.FAMILY)  # both read the accuracy run's responses
    specs = [parse_model(m) for m in models]
    names = [s.name for s in specs]
    if len(set(names)) < len(names):
        raise ValueError(f"two models share a row name ({', '.join(names)}); give one a name")
    shown = tuple(redact_url(m) for m in models)  # what the report and the folder name show: no credentials
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", "+".join(shown)).strip("-")[:80] or "models"
    made = Evaluation(shown, profile, Path(out) if out is not None else
                      repo_root() / "results" / "eval" / f"{slug}-{profile}")
    can = [capabilities(s) for s in specs]
    scorable = [m for m, (loglik, _) in zip(models, can) if not loglik]  # the specs as given
    readable = [m for m, (_, hidden) in zip(models, can) if not hidden]
    for spec, whys in zip(specs, can):
        for what, why in zip(("forced choice and LogicMark", "probing"), whys):
            if why:
                made.notes.append(f"{spec.name}: no {what}: {why}")
    _claim(made.out, {"models": [s.model_id for s in specs], "names": names, "profile": profile, "seed": seed,
                     "families": [f for f in FAMILIES if f in chosen]})
    bar = tqdm(chosen, desc="finelogic eval", unit="family")
    for family in bar:
        bar.set_postfix_str(family)
        if family == accuracy.FAMILY:
            run = accuracy.run(profile, data_dir=data_dir, models=tuple(models),
                               forced_choice=len(scorable) == len(specs), seed=seed)
        elif family == depth.FAMILY:
            run = depth.run(profile, accuracy_run=made.runs[accuracy.FAMILY], seed=seed)
        elif family == soundness.FAMILY:
            run = soundness.run(profile, accuracy_run=made.runs[accuracy.FAMILY], seed=seed)
        elif family == probing.FAMILY:
            if not readable:
                made.skipped[family] = "no model given runs in this process (probing reads hidden states)"
                continue
            run = probing.run(profile, models=(*readable, "random-init"),
                              sft_checkpoints=(), progress=True, seed=seed)
        else:
            if not scorable:
                made.skipped[family] = "no model given offers usable log-likelihoods (LogicMark ranks options by them)"
                continue
            run = logicmark.run(profile, extra_models=scorable, embedded=False,
                                random_control=False, gemma=False, sft_checkpoints=(), seed=seed)
        run.write(made.out / family)
        made.runs[family] = run
    bar.close()
    for family in set(FAMILIES) - set(made.runs):  # skipped now: a folder an earlier try wrote is not this one's
        shutil.rmtree(made.out / family, ignore_errors=True)
    plain = {name for run in made.runs.values() for name, how in run.provenance.templates.items() if how == COMPLETION}
    made.notes += [f"{name}: {PLAIN_TEXT_NOTE}" for name in names if name in plain]  # as the runs recorded it
    return made


def _claim(out: Path, identity: Mapping[str, Any]) -> None:
    """Make ``out`` the folder of the evaluation ``identity`` (models, profile, seed, families), recorded in
    its :data:`MANIFEST`: a new or empty folder, or one that holds the same evaluation. Raises ValueError
    naming the folder, and how to replace it, when it holds other files or another evaluation."""
    manifest = out / MANIFEST
    held = [p.name for p in out.iterdir()] if out.is_dir() else []
    if held and not manifest.is_file():
        raise ValueError(f"{out} holds files that are not a finelogic evaluation's (it has no {MANIFEST}: "
                         f"{', '.join(sorted(held)[:5])}); give another --out, or empty that folder")
    if held:
        try:
            recorded = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            recorded = None
        if recorded != dict(identity):
            what = (f"models {', '.join(recorded['names'])}, profile {recorded['profile']}, seed {recorded['seed']}, "
                    f"families {', '.join(recorded['families'])}"
                    if isinstance(recorded, dict) and set(recorded) == set(identity) else f"{manifest} does not read")
            raise ValueError(f"{out} holds another evaluation ({what}); give another --out, or remove that folder "
                             f"(rm -r {out}) to replace it with this one")
    write_json_atomic(dict(identity), manifest)
