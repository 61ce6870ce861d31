"""The real slice of a rehearsal: a fraction of every family against a real model, through the same
OpenAI-compatible path a vLLM user takes (issue 18, ``finelogic rehearse --real-slice 0.01``).

The stand-in server (:mod:`finelogic.rehearsal.standin`) answers at once with made-up shapes; the slice
sends real requests to llama.cpp's server (:class:`finelogic.models.llama_server.LlamaServer`) serving the
embedded SmolLM2-135M-Instruct GGUF, through ``open_model({"kind": "openai", ...})`` and the one cache,
so what a real server does that the stand-in does not (its tokenizer and chat template, its context
limit, its slowness, its replies) is met before a paper run. Per family:

- **datasets, accuracy, depth**: the first ``ceil(fraction x n)`` items of each test set
  (``first_fraction``); every model of the profile (GPT-4o, DeepSeek-R1, Llama, Qwen) is the one
  llama.cpp model, named ``real-slice:<model>``. Their requests are the same, so the first model's
  answers are the others' cache hits;
- **soundness**: the slice's accuracy records, judged with the GPT-4.1-mini judge served by llama.cpp;
  the judge-quality set is ``ceil(fraction x 100)`` problems;
- **supervision**: training sets of ``ceil(fraction x n)`` problems in every style, trained
  ``train_steps`` steps on the rehearsal's small random-init stand-in (training is not what a server
  does); the base and every fine-tuned model are evaluated on the sliced test sets through llama.cpp,
  which serves the embedded model for each of them (the trained weights are not served);
- **probing** (hidden states) and **logicmark** (log-likelihoods) cannot go through a chat server:
  hidden states are not an API, and llama.cpp's ``/v1/completions`` echoes prompt log-probs shifted
  by one position (``tests/test_llama_server.py``), so :class:`~finelogic.models.openai_backend.OpenAIBackend`
  refuses log-likelihood scoring there. Both read the embedded model **in process** (the converted
  checkpoint, as ``ckpt``), on ``ceil(fraction x n)`` problems / items; their rows say so.

Every generation is capped at ``max_new_tokens`` (default :data:`MAX_NEW_TOKENS`; the paper's 3,072 would
take hours on a CPU), so most answers are cut at the cap: the slice is a check of the code path against a
real server, and its accuracies are not results. Its report rows have stage ``real-slice`` and a ``note``
saying all this; its results and cache go to ``<root>/real-slice/``.
"""
from __future__ import annotations

import logging
import math
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from finelogic.config import environment
from finelogic.data.stored import copy_stored, stored_folder
from finelogic.profiles import get_profile
from finelogic.rehearsal.rehearse import _name, _run_family

log = logging.getLogger(__name__)

PREFIX = "real-slice:"
#: New tokens per generation in the slice (the paper profile asks for 3,072).
MAX_NEW_TOKENS = 32
#: Requests in flight at once: llama.cpp's Python server answers one at a time.
SERVER_OPTIONS = {"max_concurrency": 1, "timeout": 900, "extra_body": {"repeat_penalty": 1.0}}
PROFILE = "paper"
#: llama.cpp's context window: SmolLM2's 8,192 tokens (the paper-layout Few-shot prompts pass 2,048).
N_CTX = 8192
#: Judge-quality steps the LLM judge is asked about in the slice (the paper profile: all of them).
QUALITY_STEPS = 20
#: Families whose model calls are HTTP requests to the server.
SERVED = ("accuracy", "soundness", "supervision")


def sliced(n: int, fraction: float) -> int:
    """``ceil(fraction x n)``, at least 1: the slice's share of ``n`` items."""
    return max(1, math.ceil(fraction * n))


def served(entry: Any, url: str, model: str) -> dict[str, Any]:
    """A profile's model entry as ``real-slice:<name>``: the llama.cpp model at ``url`` through the OpenAI
    backend (a ``scorer`` key is kept)."""
    spec = {"name": PREFIX + _name(entry), "kind": "openai", "model": model, "base_url": url,
            "options": {k: (dict(v) if isinstance(v, dict) else v) for k, v in SERVER_OPTIONS.items()}}
    if isinstance(entry, Mapping) and "scorer" in entry:
        spec["scorer"] = entry["scorer"]
    return spec


def in_process(entry: Any, checkpoint: Path) -> dict[str, Any]:
    """A profile's in-process model entry as ``real-slice:<name>``: the embedded model's converted
    checkpoint, read in process."""
    return {"name": f"{PREFIX}{_name(entry)} (embedded, in process)", "kind": "ckpt", "path": str(checkpoint)}


def slice_plan(family: str, fraction: float, url: str, model: str, *, embedded: Path, standin: Path,
               max_new_tokens: int = MAX_NEW_TOKENS, train_steps: int = 2,
               train: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """How ``family`` runs in the real slice: ``{"overrides", "backends", "note"}`` for its ``run``.

    Args:
        family: one of the rehearsal's families.
        fraction: the share of every test set, training set and item list, in (0, 1].
        url, model: the llama.cpp server's base URL and model alias.
        embedded: the embedded model's converted checkpoint (in-process families).
        standin: the rehearsal's random-init stand-in checkpoint (supervision's training).
        max_new_tokens: the cap on every generation.
        train_steps: optimizer steps per fine-tuned model.
        train: supervision's ``train`` override (default: the profile's with ``max_steps=train_steps``;
            the rehearsal passes its stand-in training settings).
    """
    from finelogic.models.spec import open_model

    if not 0 < fraction <= 1:
        raise ValueError(f"the real slice's fraction must be in (0, 1], got {fraction!r}")
    profile = get_profile(PROFILE)
    cap = f"new tokens capped at {max_new_tokens} (paper: 3,072)"
    server = f"llama.cpp server ({model})"
    share = f"first {fraction:g} of each set"
    if family == "datasets":
        return {"overrides": {"first_fraction": fraction}, "backends": {}, "note": f"{share}; no model"}
    if family in ("accuracy", "depth"):
        section = profile.section("accuracy")
        models = [served(e, url, model) for e in section["models"]]
        generation = {**section["generation"], "max_new_tokens": max_new_tokens}
        overrides = {"models": models, "generation": generation, "first_fraction": fraction}
        if family == "depth":  # the same overrides, so depth reads the slice's accuracy run instead of making one
            return {"overrides": overrides, "backends": {}, "note": "reads the real slice's accuracy run"}
        return {"overrides": overrides, "backends": {},
                "note": f"{share}; every model is the {server} through the OpenAI backend; {cap}"}
    if family == "soundness":
        section = profile.section("soundness")
        # The teaching example needs a deep enough gold proof: one problem per depth, whatever the fraction.
        quality = {**section["quality"], "n": max(len(section["quality"]["depths"]),
                                                  sliced(section["quality"]["n"], fraction))}
        steps = QUALITY_STEPS
        return {"overrides": {"llm_judge": served(section["llm_judge"], url, model), "quality": quality,
                              "llm_quality_steps": steps},
                "backends": {}, "note": (f"judge = the {server}; judge quality: {quality['n']} problems, "
                                         f"the LLM judge on {steps} of their steps")}
    if family == "supervision":
        from finelogic.sft.styles import STYLES

        section = profile.section("sft")
        base = {"name": PREFIX + _name(section["base_model"]), "kind": "ckpt", "path": str(standin)}
        sizes = {k: sliced(section[k], fraction) for k in ("fld_n", "prontoqa_n")}
        sizes["fld_unknown"] = min(sizes["fld_n"], sliced(section["fld_unknown"], fraction))
        evaluation = {**section["eval"], "first_fraction": fraction,
                      "generation": {**section["eval"]["generation"], "max_new_tokens": max_new_tokens}}
        names = [f"SFT-{s}" for s in STYLES] + (["LogiPT"] if section.get("logipt") else [])
        backends = {base["name"]: open_model(served(section["base_model"], url, model))}
        backends |= {n: open_model(served(n, url, model)) for n in names}
        return {"overrides": {**sizes, "base_model": base, "eval": evaluation,
                              "train": dict(train or {**section.get("train", {}), "max_steps": train_steps})},
                "backends": backends,
                "note": (f"training sets {sizes['fld_n']} FLD + {sizes['prontoqa_n']} ProntoQA, {train_steps} steps "
                         f"on the random-init stand-in; evaluation: {share}, base and every fine-tuned "
                         f"model = the {server} (trained weights not served); {cap}")}
    if family == "probing":
        section = profile.section("probing")
        # At least the smoke profile's 4 train / 2 test problems: fewer leave a probe a single class.
        n_train, n_test = max(4, sliced(section["n_train"], fraction)), max(2, sliced(section["n_test"], fraction))
        return {"overrides": {"n_train": n_train, "n_test": n_test,
                              "models": [in_process(e, embedded) for e in section["models"]]},
                "backends": {},
                "note": (f"{n_train} train + {n_test} test problems; hidden states are not served: every model "
                         "is the embedded model in process")}
    if family == "logicmark":
        from finelogic.runs.logicmark import model_entries

        section = profile.section("logicmark")
        entries = model_entries(extra_models=section.get("extra_models", ()),
                                random_control=bool(section["random_control"]))
        backends = {e["name"]: open_model(in_process(e["name"], embedded), batch_size=int(section["batch_size"]))
                    for e in entries}
        return {"overrides": {"items": sliced(int(section["items"]), fraction)}, "backends": backends,
                "note": ("llama.cpp echoes prompt log-probs shifted by one (OpenAIBackend refuses them): "
                         "every model is the embedded model in process")}
    raise ValueError(f"no real-slice plan for family {family!r}")


def rehearse_slice(families: Sequence[str], fraction: float, root: Path, *, standin: Path, seed: int = 0,
                   fresh: bool = True, data_dir: Any = None, keep_going: bool = True,
                   train: Mapping[str, Any] | None = None, max_new_tokens: int | None = None,
                   overrides: Mapping[str, Mapping[str, Any]] | None = None, rows: list[dict[str, Any]],
                   errors: dict[str, str], written: Callable[[], Any] = lambda: None) -> None:
    """Run ``families`` as the real slice (module docstring): start llama.cpp's server on the embedded GGUF,
    run each family with :func:`slice_plan` under ``root`` (results ``root/paper/<family>``, cache
    ``root/cache``), append its report rows (stage ``real-slice``, ``real-slice write``) to ``rows`` and its
    error to ``errors`` (as ``real-slice <family>``), call ``written`` after each family, stop the server."""
    from finelogic.models.embedded import converted_path
    from finelogic.models.llama_server import LlamaServer

    max_new_tokens = max_new_tokens or MAX_NEW_TOKENS
    if fresh:
        for sub in ("cache", PROFILE):
            shutil.rmtree(root / sub, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    copy_stored(stored_folder(), root / "cache" / "datasets")  # test sets, not model output
    embedded = converted_path()  # in the user's cache, before the slice's cache is set: converted once
    start = time.perf_counter()
    with LlamaServer(threads=1, n_ctx=N_CTX, startup_timeout=600) as server:
        log.info("real slice: llama.cpp server up in %.0f s", time.perf_counter() - start)
        with environment(FINELOGIC_CACHE=root / "cache", FINELOGIC_RESULTS=root):
            for family in families:
                plan = slice_plan(family, fraction, server.base_url, server.model, embedded=embedded,
                                  standin=standin, max_new_tokens=max_new_tokens,
                                  train_steps=int((train or {}).get("max_steps", 2)), train=train)
                plan["overrides"].update((overrides or {}).get(family, {}))
                stage_rows, error = _run_family(family, plan, seed, data_dir, root, keep_going)
                for row, stage in zip(stage_rows, ("real-slice", "real-slice write")):
                    row.update(stage=stage, note=plan["note"])
                if family in SERVED:  # HTTP requests to llama.cpp (every attempt)
                    stage_rows[0]["requests"] = stage_rows[0]["cache_calls"]
                rows += stage_rows
                if error:
                    errors[f"real-slice {family}"] = error
                written()
