"""SFT training sets shaped like the paper's (Section 4), as chat-format examples and JSONL files.

The paper trains on FLD problems, 500 per proof depth 0–15 plus 1,500 UNKNOWN (9,500), and 3,200 ProntoQA
3-hop problems. :func:`training_problems` draws that shape from our generators at the sizes of
:data:`SIZE_KEYS` (FLD spread evenly over ``fld_depths`` × labels by
:func:`finelogic.data.generators.fld.even_plan`; at paper size exactly the paper's 250 + 250 per depth),
from seeds of their own (``sft/<seed>/...``, ids ``sft-``), never an evaluation set's. Each problem is
written in one supervision style (:func:`finelogic.sft.styles.build`) as an example ``{"id", "style",
"messages", "meta"}``: the system and user turns exactly the accuracy evaluation's **CoT** ones (every
style reasons before the marker), the assistant turn the style's text, ``meta`` its dataset, label and
depth. :func:`checked_training_set` checks every line with z3 and can keep the result in a memo.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
from pathlib import Path
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks

from finelogic.data.generators.fld import even_plan, generate_fld_problem
from finelogic.data.generators.prontoqa import generate_prontoqa
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Problem
from finelogic.data.stored import kept_problems, stored_key
from finelogic.files import write_text_atomic
from finelogic.memo import memo_key
from finelogic.prompts import COT, build_conversation
from finelogic.sft.style_checks import check
from finelogic.sft.styles import STYLES, StyleError, build

log = logging.getLogger(__name__)

#: The prompt setting whose system and user turns the examples use.
SETTING = COT

#: The data sizes a training set needs (see the module docstring).
SIZE_KEYS = ("fld_n", "fld_unknown", "fld_depths", "prontoqa_n", "prontoqa_hops")
#: The stored training problems' name in their key; bump its version when :func:`training_problems` changes.
TRAINING_KEY = "sft-training/1"


@dataclasses.dataclass(frozen=True)
class CheckedSet:
    """A style's training set (in the seeded order), the number of lines :func:`check` judged over all its
    examples, and ``"problem <id>: <reason>"`` per line that is not valid and atomic."""

    style: str
    examples: list[dict[str, Any]]
    lines: int
    failures: tuple[str, ...] = ()


def check_sizes(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`SIZE_KEYS` of ``settings``; ValueError when one is missing or ``fld_unknown`` is not
    between 0 and ``fld_n``."""
    missing = [k for k in SIZE_KEYS if k not in settings]
    if missing:
        raise ValueError(f"SFT training sizes need {', '.join(missing)}")
    sizes = {k: settings[k] for k in SIZE_KEYS}
    if not 0 <= sizes["fld_unknown"] <= sizes["fld_n"]:
        raise ValueError(f"fld_unknown must be between 0 and fld_n ({sizes['fld_n']}), got {sizes['fld_unknown']}")
    return sizes


def fld_plan(n: int, n_unknown: int, depths: Iterable[int]) -> dict[tuple[int, str], int]:
    """``{(depth, label): count}`` for ``n`` FLD problems, ``n_unknown`` of them UNKNOWN; empty cells left out."""
    depths = tuple(depths)
    plan = {**even_plan(n - n_unknown, depths, (PROVED, DISPROVED)), **even_plan(n_unknown, depths, (UNKNOWN,))}
    return {cell: count for cell, count in plan.items() if count}


def training_problems(sizes: Mapping[str, Any], seed: int = 0, *, progress: bool | None = None) -> list[Problem]:
    """The problems of a training set of ``sizes``, FLD then ProntoQA, deterministic in ``seed`` (FLD item
    ``k`` of cell ``(d, label)`` from the seed ``sft/<seed>/<d>/<label>/<k>``); kept in the store like the
    test sets (:func:`finelogic.data.stored.kept_problems`)."""
    size = check_sizes(sizes)
    key = stored_key(TRAINING_KEY, None, seed, size)
    return kept_problems("sft-training", key, lambda: _draw_training_problems(size, seed, progress))


def _draw_training_problems(size: Mapping[str, Any], seed: int, progress: bool | None) -> list[Problem]:
    plan = fld_plan(size["fld_n"], size["fld_unknown"], size["fld_depths"])
    bar = tqdm(total=size["fld_n"], desc="SFT FLD problems",
               disable=progress is False or (progress is None and size["fld_n"] < 200))
    problems = []
    for (depth, label), count in plan.items():
        for k in range(count):
            problems.append(generate_fld_problem(f"sft/{seed}/{depth}/{label}/{k}", depth, label,
                                                 problem_id=f"sft-fld-{seed}-d{depth}-{label}-{k}"))
            bar.update()
    bar.close()
    pronto = generate_prontoqa(size["prontoqa_n"], seed=f"sft/{seed}", hops=(size["prontoqa_hops"],))
    problems += [dataclasses.replace(p, id=f"sft-prontoqa-{seed}-{i:05d}") for i, p in enumerate(pronto)]
    return problems


def example(style: str, problem: Problem, text: str | None = None) -> dict[str, Any]:
    """One chat-format training example: the CoT evaluation prompt, then ``text`` (default the style's)."""
    messages = build_conversation(problem, SETTING)
    messages.append({"role": "assistant", "content": build(style, problem) if text is None else text})
    return {"id": problem.id, "style": style, "messages": messages,
            "meta": {"dataset": problem.dataset, "label": problem.label, "depth": problem.depth}}


def problems_digest(problems: Sequence[Problem]) -> str:
    """sha256 of every field of every problem, in order (a memo key part)."""
    return memo_key([p.key_fields() for p in problems])


def _ordered(style: str, problems: Sequence[Problem], seed: int) -> list[Problem]:
    """The problems in a training set's seeded shuffled order, so FLD depths and ProntoQA mix (StyleError for
    an unknown style)."""
    if style not in STYLES:
        raise StyleError(f"unknown supervision style {style!r}; choose one of {', '.join(STYLES)}")
    problems = list(problems)
    random.Random(f"sft/{seed}/order").shuffle(problems)
    return problems


def checked_training_set(style: str, problems: Sequence[Problem], seed: int = 0, *, progress: bool | None = None,
                         memo: MutableMapping[str, Any] | None = None, digest: str | None = None) -> CheckedSet:
    """The training examples of one supervision style for the problems of :func:`training_problems`, in an
    order seeded by ``seed``, each text judged line by line by :func:`check` (z3). ``memo`` keeps the texts
    and the check's counts across runs, keyed by the style, the seed and every field of every problem
    (``digest``: ``problems_digest(problems)`` when the caller has it); ``progress`` None: bars for 200
    items or more."""
    ordered = _ordered(style, problems, seed)
    # The order is a function of the problems and the seed, so both name the set.
    key = memo_key({"kind": "sft training set", "style": style, "seed": seed,
                    "problems": digest or problems_digest(problems)}) if memo is not None else ""
    kept = memo.get(key) if memo is not None else None
    if kept is not None:
        log.info("SFT %s: %d examples read from the memo (built and checked before)", style, len(kept["texts"]))
        return CheckedSet(style, [example(style, p, text) for p, text in zip(ordered, kept["texts"], strict=True)],
                          kept["lines"], tuple(kept["failures"]))
    examples, lines, failures = [], 0, []
    show = progress is not False and (progress is True or len(ordered) >= 200)
    for problem in tqdm(ordered, desc=f"SFT {style} examples", disable=not show):
        item = example(style, problem)
        verdicts = check(style, problem, item["messages"][-1]["content"])
        lines += len(verdicts)
        failures += [f"problem {problem.id!r}: {v.reason}" for v in verdicts if not (v.valid and v.atomic)]
        examples.append(item)
    log.info("SFT %s: %d examples, %d lines checked, %d failing, seed %s", style, len(examples), lines,
             len(failures), seed)
    if memo is not None:
        memo[key] = {"texts": [e["messages"][-1]["content"] for e in examples], "lines": lines,
                     "failures": failures}
    return CheckedSet(style, examples, lines, tuple(failures))


def training_set(style: str, problems: Sequence[Problem], seed: int = 0, *, verify: bool = True,
                 progress: bool | None = None, memo: MutableMapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The training examples of one supervision style (:func:`checked_training_set`'s, when ``verify``), in a
    seeded shuffled order; ``verify=False`` builds only.

    Raises:
        StyleError: unknown style, an unsupported problem, or (``verify``) a built line that fails its check.
    """
    if verify:
        checked = checked_training_set(style, problems, seed, progress=progress, memo=memo)
        if checked.failures:
            raise StyleError(f"style {style!r}: {len(checked.failures)} built lines fail their check: "
                             + "; ".join(checked.failures[:3]))
        return checked.examples
    ordered = _ordered(style, problems, seed)
    show = progress is not False and (progress is True or len(ordered) >= 200)
    out = [example(style, p) for p in tqdm(ordered, desc=f"SFT {style} examples", disable=not show)]
    log.info("SFT %s: %d examples, seed %s", style, len(out), seed)
    return out


def write_jsonl(examples: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> Path:
    """One JSON object per line (UTF-8), written atomically (:func:`finelogic.files.write_text_atomic`)."""
    return write_text_atomic(path, "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in examples))


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The examples :func:`write_jsonl` wrote."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
