"""Surface-cue rates of FLD-style items: how far rules that read no chain get (run by hand).

    .venv/bin/python benchmarks/fld_cue_rates.py                          # 320 PROVED/DISPROVED items, seeds 0-2
    .venv/bin/python benchmarks/fld_cue_rates.py --n 480 --seeds 0,1,2,3,4 --unknown 160
    .venv/bin/python benchmarks/fld_cue_rates.py --seeds '' --problems results/study/accuracy/eval_sets.json

Rules, scored on the PROVED/DISPROVED items (:mod:`finelogic.eval.cues`):

- ``consequent``: :func:`finelogic.eval.cues.consequent_rule` (the side some fact states, else the negation rule);
- ``consequent, DISPROVED fallback``: the same, answering DISPROVED where it would fall back;
- ``negation``: :func:`finelogic.eval.cues.negation_rule` (DISPROVED iff the hypothesis has a negation word);
- ``best constant``: the share of the most frequent gold label.

Generated items come from :func:`finelogic.data.generators.fld.generate_fld` at ``--depths`` with labels PROVED
and DISPROVED (``--unknown`` more UNKNOWN items per seed are reported apart: the consequent rule never answers
UNKNOWN, so its accuracy there is 0 and the line shows what it answers instead). ``--problems`` reads a JSON
list of problems, or of ``{name, problems}`` sets (the study's ``eval_sets.json``; only sets of dataset "fld"),
or JSON lines. Each block also shows which sides the facts state (:func:`finelogic.data.generators.fld.states`),
per label: ``H`` the hypothesis only, ``¬H`` its negation only, ``both``, ``none``.
"""
from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path
from typing import Iterable

from finelogic.data.generators.fld import generate_fld, statement_counts
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.eval.cues import consequent_rule, negation_rule
from finelogic.logic import parse_formula


def sides(problem: Problem) -> str:
    """Which of the hypothesis and its negation the facts state: "H", "¬H", "both" or "none"."""
    facts = [parse_formula(problem.formulas[f.id]) for f in problem.facts]
    proves, disproves = statement_counts(facts, parse_formula(problem.formulas["hypothesis"]))
    return {(True, False): "H", (False, True): "¬H", (True, True): "both", (False, False): "none"}[proves > 0, disproves > 0]


def disproved_fallback(problem: Problem) -> str:
    """The consequent rule with DISPROVED wherever it falls back to the negation rule."""
    side = sides(problem)
    return PROVED if side == "H" else DISPROVED


def rates(problems: list[Problem]) -> dict[str, tuple[int, int]]:
    """``rule: (right, n)`` on the PROVED/DISPROVED items of ``problems``."""
    decided = [p for p in problems if p.label in (PROVED, DISPROVED)]
    answers = {"consequent": [consequent_rule(p) for p in decided],
               "consequent, DISPROVED fallback": [disproved_fallback(p) for p in decided],
               "negation": [negation_rule(p) for p in decided]}
    for p, answer in zip(decided, answers["consequent"]):  # the two readings of "states" agree
        side = sides(p)
        expected = PROVED if side == "H" else DISPROVED if side == "¬H" else negation_rule(p)
        assert answer == expected, (p.id, answer, expected)
    out = {name: (sum(a == p.label for a, p in zip(given, decided)), len(decided)) for name, given in answers.items()}
    labels = collections.Counter(p.label for p in decided)
    out["best constant"] = (max(labels.values(), default=0), len(decided))
    return out


def report(title: str, problems: list[Problem]) -> dict[str, tuple[int, int]]:
    print(f"\n{title}")
    out = rates(problems)
    for name, (right, n) in out.items():
        print(f"  {name:32s} {right:4d}/{n:<4d} {100 * right / n if n else float('nan'):5.1f}%")
    for label in (PROVED, DISPROVED, UNKNOWN):
        items = [p for p in problems if p.label == label]
        if not items:
            continue
        counts = collections.Counter(sides(p) for p in items)
        negated = sum(negation_rule(p) == DISPROVED for p in items)
        shown = "  ".join(f"{k} {counts[k]:3d}" for k in ("H", "¬H", "both", "none"))
        print(f"  {label:9s} n {len(items):4d}  stated: {shown}  negation word {100 * negated / len(items):5.1f}%")
    unknown = [p for p in problems if p.label == UNKNOWN]
    if unknown:
        said = collections.Counter(consequent_rule(p) for p in unknown)
        print(f"  consequent rule on UNKNOWN: 0/{len(unknown)} right (never answers UNKNOWN); answers "
              + ", ".join(f"{k} {v}" for k, v in sorted(said.items())))
    return out


def read_problems(path: Path) -> Iterable[tuple[str, list[Problem]]]:
    """``(name, problems)`` sets from a JSON list (of problems or of ``{name, problems}``) or JSON lines."""
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = [json.loads(line) for line in text.splitlines() if line.strip()]
    if data and "problems" in data[0]:
        for block in data:
            problems = [Problem.from_dict(d) for d in block["problems"]]
            if problems and problems[0].dataset == "fld":
                yield block["name"], problems
    else:
        yield path.name, [Problem.from_dict(d) for d in data]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=320, help="PROVED/DISPROVED items per seed")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated; empty for none")
    parser.add_argument("--depths", default="0-7", help="lo-hi, inclusive")
    parser.add_argument("--unknown", type=int, default=0, help="UNKNOWN items per seed, reported apart")
    parser.add_argument("--problems", type=Path, help="a problems file to score as well")
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.depths.split("-"))
    depths = range(lo, hi + 1)

    pooled: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for seed in [int(s) for s in args.seeds.split(",") if s.strip()]:
        start = time.perf_counter()
        problems = generate_fld(args.n, seed=seed, depths=depths, labels=(PROVED, DISPROVED), progress=False)
        if args.unknown:
            problems += generate_fld(args.unknown, seed=seed, depths=depths, labels=(UNKNOWN,), progress=False)
        seconds = time.perf_counter() - start
        out = report(f"seed {seed}: {len(problems)} generated items, depths {lo}-{hi} ({seconds:.1f} s)", problems)
        for name, (right, n) in out.items():
            pooled[name][0] += right
            pooled[name][1] += n
    if len(pooled) and pooled["negation"][1]:
        print("\npooled over seeds")
        for name, (right, n) in pooled.items():
            print(f"  {name:32s} {right:4d}/{n:<4d} {100 * right / n:5.1f}%")
    if args.problems:
        for name, problems in read_problems(args.problems):
            report(f"{args.problems} [{name}]: {len(problems)} items", problems)


if __name__ == "__main__":
    main()
