"""A paper-scale rehearsal (``book/rehearsal.md``): every family's ``run("paper", ...)`` at the paper's sizes with
stand-in models, to find crashes and measure what a real run will send: wall time, memory, requests, prompt
tokens, token caps, cache and result bytes per family and stage, and the API cost per model
(:func:`plan_table`). None of its numbers are results about any model.
"""
from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from finelogic.config import environment, repo_root
from finelogic.rehearsal.running import PROFILE, REPORT_COLUMNS, prepare, report_row, run_family, served_spec
from finelogic.rehearsal.standin import StandInProcess
from finelogic.runs import registry
from finelogic.runs.base import PlanContext, Run, entry_name

log = logging.getLogger(__name__)

PREFIX = "stand-in:"
REQUEST_COLUMNS = ("family", "model", "kind", "requests", "prompt_tokens", "cap_tokens", "reply_tokens")
#: What the stand-in answers quickly: no real backoff is needed between its deterministic retries.
SERVER_OPTIONS = {"max_concurrency": 8, "backoff_base": 0.01, "backoff_max": 0.05}
#: Over the paper's recipe (otherwise kept): float32 (bfloat16 matmuls on a CPU are slow), a 1,024-token
#: cutoff (the longest paper-size prompt is ~550 tokens), 4 examples per step instead of 32.
REHEARSAL_TRAIN = {"dtype": "float32", "cutoff_len": 1024, "batch_size": 4, "micro_batch_size": 4}


@dataclass
class Rehearsal:
    """What :func:`rehearse` made: the report rows, the request counts, and where they were written."""

    report: pd.DataFrame
    requests: pd.DataFrame
    root: Path
    errors: dict[str, str] = field(default_factory=dict)

    def plan(self, prices: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
        return plan_table(self.requests, prices)


def rehearse(families: Sequence[str] | None = None, *, real_slice: float = 0.0, root: str | Path | None = None,
             seed: int = 0, fresh: bool = True, train_steps: int = 2,
             overrides: Mapping[str, Mapping[str, Any]] | None = None, data_dir: str | Path | None = None,
             stand_ins: bool = True, slice_tokens: int | None = None,
             slice_overrides: Mapping[str, Mapping[str, Any]] | None = None,
             distributed: bool = False) -> Rehearsal:
    """Run ``families`` (default all, in the registry's order) of the paper profile against stand-ins: served
    models answered by :class:`~finelogic.rehearsal.standin.StandInServer` through the real OpenAI backend,
    in-process ones small random-init checkpoints (:func:`standin_checkpoints`), fine-tuning ``train_steps``
    steps of the paper's recipe (:data:`REHEARSAL_TRAIN`). A family's crash is recorded in the report and the
    next family runs. Results go to ``<root>/paper/<family>/`` (default root ``<repo>/results/rehearsal``), the
    cache to ``<root>/cache``, the report to ``report.csv``, ``requests.csv`` and ``plan.csv``; ``fresh=False``
    answers a rerun from the cache and writes ``report-resumed.csv`` / ``requests-resumed.csv`` beside them.

    ``real_slice`` (a fraction in (0, 1]) also runs that share of every family against llama.cpp's server
    (:mod:`finelogic.rehearsal.real_slice`, under ``<root>/real-slice``, ``slice_tokens`` new tokens);
    ``stand_ins=False`` runs the real slice only; ``overrides`` / ``slice_overrides`` per family are applied
    last; ``distributed`` also rehearses the TRL path on 2 CPU processes after supervision
    (:mod:`finelogic.rehearsal.distributed`; skipped without TRL).
    """
    if not 0 <= real_slice <= 1:
        raise ValueError(f"real_slice must be a fraction in [0, 1], got {real_slice!r}")
    chosen = registry.ordered(families)  # a ValueError naming the valid families for an unknown one
    root = Path(root) if root is not None else repo_root() / "results" / "rehearsal"
    prepare(root, fresh and stand_ins)
    checkpoints = standin_checkpoints(root / "cache" / "stand-in-models")
    server = _stand_in(root / "cache" / "stand-in-url", checkpoints[0])
    rows, request_rows, errors = [], [], {}
    made: dict[str, Run] = {}
    suffix = ("" if fresh else "-resumed") + ("" if stand_ins else "-real-slice")
    try:
        with environment(FINELOGIC_CACHE=root / "cache", FINELOGIC_RESULTS=root):
            for family in chosen if stand_ins else ():
                ctx = plan_context(server.url, checkpoints, train_steps=train_steps,
                                   given=(overrides or {}).get(family.name, {}))
                before = {(c["model"], c["kind"]): c for c in server.counts()}
                stage_rows, error = run_family(family, ctx, seed, data_dir, root, made)
                sent = _difference(server.counts(), before)
                request_rows += [{"family": family.name, **c} for c in sent]
                stage_rows[0].update({k: sum(c[k] for c in sent) for k in ("requests", "prompt_tokens", "cap_tokens")},
                                     judge_calls=sum(c["requests"] for c in sent if c["kind"] == "judge"))
                rows += stage_rows
                if error:
                    errors[family.name] = error
                _write(root, suffix, rows, request_rows)
                if distributed and family.name == "supervision":
                    trl_rows, trl_errors = _distributed(root, checkpoints[0], seed, train_steps,
                                                        (overrides or {}).get("supervision", {}))
                    rows += trl_rows
                    errors |= {f"supervision-trl {k}": v for k, v in trl_errors.items()}
                    _write(root, suffix, rows, request_rows)
    finally:
        server.stop()
    if real_slice:
        from finelogic.rehearsal.real_slice import rehearse_slice

        rehearse_slice(chosen, real_slice, root / "real-slice", standin=checkpoints[0], seed=seed, fresh=fresh,
                       data_dir=data_dir, train={**REHEARSAL_TRAIN, "max_steps": train_steps},
                       max_new_tokens=slice_tokens, overrides=slice_overrides, rows=rows, errors=errors,
                       written=lambda: _write(root, suffix, rows, request_rows))
    report, requests = _write(root, suffix, rows, request_rows)
    if fresh and stand_ins:
        plan_table(requests).to_csv(root / "plan.csv", index=False)
    return Rehearsal(report, requests, root, errors)


def _distributed(root: Path, checkpoint: Path, seed: int, steps: int,
                 given: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The distributed-training stage's rows, or one row saying why it was skipped."""
    from finelogic.rehearsal.distributed import rehearse_distributed
    from finelogic.sft.datasets import SIZE_KEYS
    from finelogic.sft.trl_train import trl_available

    if not trl_available():
        return [report_row("supervision", "trl-2proc", "skipped: trl not installed (the [train] extra)")], {}
    sizes = {k: v for k, v in given.items() if k in SIZE_KEYS}
    return rehearse_distributed(root / "cache", f"ckpt:{checkpoint}", steps=steps, train=REHEARSAL_TRAIN,
                                seed=seed, sizes=sizes or None)


def _stand_in(remembered: Path, checkpoint: Path) -> StandInProcess:
    """The stand-in server in its own process (its work runs beside the run's, not in turns), at the URL of the
    rehearsal's earlier one where it can: a served model's cache identity names its URL."""
    before = remembered.read_text().strip() if remembered.is_file() else None
    port = int(before.rsplit(":", 1)[1].split("/")[0]) if before else 0
    server = StandInProcess(checkpoint, port=port)
    if before and server.url != before:
        log.warning("the stand-in server could not listen at %s again (the port is taken): it is at %s, and the "
                    "answers stored for %s are asked again", before, server.url, before)
    remembered.parent.mkdir(parents=True, exist_ok=True)
    remembered.write_text(server.url + "\n")
    return server


def plan_context(url: str, checkpoints: Sequence[Path], *, train_steps: int = 2,
                 given: Mapping[str, Any] | None = None) -> PlanContext:
    """The stand-ins' :class:`~finelogic.runs.base.PlanContext`: served models on the server at ``url`` (a
    ``scorer`` key kept), in-process ones the random-init ``checkpoints`` (one per model index), training from
    the first."""
    def served(entry: Any) -> dict[str, Any]:
        name = entry_name(entry)
        model = entry.get("model") or entry.get("path") or name if isinstance(entry, Mapping) else name
        return served_spec(entry, PREFIX + name, PREFIX + str(model), url, dict(SERVER_OPTIONS))

    def local(entry: Any, checkpoint: Path) -> dict[str, Any]:
        name = entry_name(entry)
        return {"name": PREFIX + name if not name.startswith(PREFIX) else name, "kind": "ckpt", "path": str(checkpoint)}

    return PlanContext(PROFILE, serve=served, local=lambda entry, i=0: local(entry, checkpoints[i % len(checkpoints)]),
                       trainable=lambda entry: local(entry, checkpoints[0]),
                       train={**REHEARSAL_TRAIN, "max_steps": train_steps}, given=dict(given or {}))


def standin_checkpoints(folder: Path, *, count: int = 6) -> list[Path]:
    """``count`` random-init checkpoints (seeds 0..count-1) of the embedded model's architecture cut to
    2 blocks of width 64, made once per folder: one per LogicMark model of the paper profile (two models on one
    checkpoint would share cache entries)."""
    paths = [folder / f"smollm2-arch-2x64-seed{seed}" for seed in range(count)]
    for seed, target in enumerate(paths):
        if (target / "config.json").is_file():
            continue
        from transformers import AutoConfig, AutoTokenizer

        from finelogic.models.embedded import converted_path, random_init_like

        source = converted_path()
        config = AutoConfig.from_pretrained(source)
        config.update({"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
                       "num_key_value_heads": 4, "head_dim": 16})
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        random_init_like(config, seed).save_pretrained(staging, safe_serialization=True)
        AutoTokenizer.from_pretrained(source).save_pretrained(staging)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    return paths


def plan_table(requests: pd.DataFrame, prices: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """Requests and tokens per model for a real run, and its API cost at ``prices`` (model -> US$ per million
    input and output tokens; none for unpriced models), output counted at the cap: the most a run is billed."""
    columns = ["model", "requests", "prompt_tokens", "output_tokens_at_cap", "input_usd", "output_usd_at_cap",
               "total_usd_at_cap"]
    if requests.empty:
        return pd.DataFrame(columns=columns)
    grouped = requests.assign(model=requests["model"].str.removeprefix(PREFIX)).groupby("model", sort=True)
    table = grouped[["requests", "prompt_tokens", "cap_tokens"]].sum().reset_index()
    table = table.rename(columns={"cap_tokens": "output_tokens_at_cap"})
    prices = dict(prices or {})
    price_in = table["model"].map(lambda m: prices[m][0] if m in prices else float("nan"))
    price_out = table["model"].map(lambda m: prices[m][1] if m in prices else float("nan"))
    table["input_usd"] = table["prompt_tokens"] / 1e6 * price_in
    table["output_usd_at_cap"] = table["output_tokens_at_cap"] / 1e6 * price_out
    table["total_usd_at_cap"] = table["input_usd"] + table["output_usd_at_cap"]
    return table[columns]


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """``"gpt-4o=2.5/10"`` -> ``("gpt-4o", (2.5, 10.0))``: US$ per million input / output tokens."""
    model, sep, value = text.partition("=")
    number_in, slash, number_out = value.partition("/")
    try:
        if not (sep and slash and model.strip()):
            raise ValueError
        return model.strip(), (float(number_in), float(number_out))
    except ValueError:
        raise ValueError(f"price {text!r}: expected MODEL=INPUT/OUTPUT in US$ per million tokens, "
                         "e.g. gpt-4o=2.5/10") from None


def _difference(after: list[dict[str, Any]], before: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for count in after:
        old = before.get((count["model"], count["kind"]), {})
        delta = {k: v - old.get(k, 0) for k, v in count.items() if k not in ("model", "kind")}
        if delta["requests"]:
            out.append({"model": count["model"], "kind": count["kind"], **delta})
    return out


def _write(root: Path, suffix: str, rows: list[dict[str, Any]],
           request_rows: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    report = pd.DataFrame(rows, columns=list(REPORT_COLUMNS))
    requests = pd.DataFrame(request_rows, columns=list(REQUEST_COLUMNS))
    report.to_csv(root / f"report{suffix}.csv", index=False)
    requests.to_csv(root / f"requests{suffix}.csv", index=False)
    return report, requests


def render(root: str | Path, prices: Mapping[str, tuple[float, float]] | None = None) -> str:
    """The report under ``root`` as two Markdown tables (per stage; the plan per model at ``prices``)."""
    root = Path(root)
    report = pd.read_csv(root / "report.csv")
    plan = plan_table(pd.read_csv(root / "requests.csv"), prices)
    stages = report[["family", "stage", "status", "wall_s", "peak_rss_mb", "requests", "prompt_tokens", "cap_tokens",
                     "judge_calls", "cache_bytes", "result_bytes", "files", "load_avg"]]
    if not prices:  # no prices given: no cost columns, never made-up ones
        plan = plan[["model", "requests", "prompt_tokens", "output_tokens_at_cap"]]
    return (stages.to_markdown(index=False, floatfmt=".1f") + "\n\n"
            + plan.to_markdown(index=False, floatfmt=".2f") + "\n")

