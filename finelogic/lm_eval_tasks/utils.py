"""The functions the task files name (``!function utils.<name>``): each task's items, built by
``finelogic``'s own loaders and prompts, and the generation tasks' scoring (the package docstring)."""
from __future__ import annotations

import json
from typing import Any

from finelogic.data.problem import Problem
from finelogic.eval.accuracy import accuracy_record
from finelogic.prompts import build_conversation

#: The ``--metadata`` keys the tasks read, with their defaults.
DEFAULTS = {"profile": "tiny", "seed": 0, "data_dir": None, "setting": "CoT"}


def _options(metadata: dict[str, Any]) -> dict[str, Any]:
    """The keys of :data:`DEFAULTS` from lm-eval's metadata (which also carries the task's version, its
    file and the model's arguments)."""
    return {**DEFAULTS, **{k: v for k, v in metadata.items() if k in DEFAULTS and v is not None}}


def _dataset(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    import datasets

    if not docs:
        raise ValueError(f"finelogic tasks: no {name} items (its files are not present; give them with "
                         "--metadata '{\"data_dir\": \"DIR\"}' or $FINELOGIC_DATA_DIR)")
    return {"test": datasets.Dataset.from_list(docs)}


def _generation(name: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The items of test set ``name`` that ``finelogic eval --profile P`` evaluates, each with the paper's
    system prompt and user turn under the chosen setting."""
    from finelogic.data.suites import evaluation_sets
    from finelogic.runs.accuracy import PROFILES

    options = _options(metadata)
    settings = PROFILES[options["profile"]]
    [chosen] = [s for s in evaluation_sets(settings, int(options["seed"]), options["data_dir"]) if s.name == name]
    docs = []
    for problem in chosen.problems:
        system, user = build_conversation(problem, options["setting"], layout=settings.prompt_layout)
        docs.append({"id": problem.id, "system": system["content"], "user": user["content"],
                     "label": problem.label, "setting": options["setting"], "layout": str(settings.prompt_layout),
                     "problem": json.dumps(problem.to_dict())})
    return _dataset(docs, name)


def fld(**metadata: Any) -> dict[str, Any]:
    return _generation("fld", metadata)


def folio(**metadata: Any) -> dict[str, Any]:
    return _generation("folio", metadata)


def multi_logieval(**metadata: Any) -> dict[str, Any]:
    return _generation("multi_logieval", metadata)


def prontoqa(**metadata: Any) -> dict[str, Any]:
    return _generation("prontoqa", metadata)


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    """One response read as ``finelogic eval`` reads it: ``acc`` by this project's rule, ``acc_released`` by
    the released code's vLLM scorer."""
    problem = Problem.from_dict(json.loads(doc["problem"]))
    conversation = [{"role": "system", "content": doc["system"]}, {"role": "user", "content": doc["user"]}]
    record = accuracy_record(problem, conversation, results[0], None, seconds=0.0, setting=doc["setting"],
                             model="lm-eval", layout=doc["layout"])
    return {"acc": float(bool(record["correct"])), "acc_released": float(bool(record["correct_compat"]))}


def logicmark(**metadata: Any) -> dict[str, Any]:
    """The LogicMark items ``finelogic eval --profile P`` scores, in the card's context and options."""
    from finelogic.eval.logicmark import context_of
    from finelogic.runs.logicmark import PROFILES, logicmark_items

    options = _options(metadata)
    settings = PROFILES[options["profile"]]
    problems = logicmark_items(settings.items, int(options["seed"]), settings.logicmark_path)
    return _dataset([{"id": p.id, "context": context_of(p), "choices": list(p.options), "answer": p.answer_index,
                      "hop": p.depth} for p in problems], "LogicMark")
