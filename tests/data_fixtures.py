"""A data folder in the published layout (``book/data-formats.md``, "The data folder"), written from our own items:
FOLIO's v0.0 validation file (204 lines), the 25 Multi-LogiEval d4/d5 rule files (15 samples each, 20 for nm) and
ProntoQA's ``dev.json`` (500 items), each in its published format, for tests of what a run does with a data folder.
Import it explicitly (``from data_fixtures import write_published_layout``).
"""
from __future__ import annotations

import json
from pathlib import Path

from finelogic.data.loaders.multi_logieval import PAPER_FILES


def write_published_layout(root: Path) -> Path:
    """``root`` holding ``folio/``, ``multi_logieval/data/`` and ``prontoqa/dev.json``; returns ``root``."""
    folio = root / "folio"
    folio.mkdir(parents=True)
    lines = [{"premises": [f"All members of club {i} sing.", f"Ann is a member of club {i}."],
              "premises-FOL": [f"∀x (Member{i}(x) → Sing(x))", f"Member{i}(ann)"],
              "conclusion": "Ann sings.", "conclusion-FOL": "Sing(ann)", "label": ("True", "False", "Uncertain")[i % 3]}
             for i in range(204)]
    (folio / "folio-validation.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for name, size in PAPER_FILES.items():  # d4_Data/fol/BD_C_DS_MP.json: 15, ...
        depth, logic, rule = name.removesuffix(".json").split("/")
        samples = [{"id": k, "context": f"If Ann bakes loaf {k}, the kitchen smells of bread. Ann bakes loaf {k}.",
                    "question": f"Does the kitchen smell of bread from loaf {k}?",
                    "answer": ("Yes" if k % 2 else "No") if logic == "nm" else "yes"} for k in range(1, size + 1)]
        path = root / "multi_logieval" / "data" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {"logic": logic, "rule": rule, "depth": depth.removesuffix("_Data"), "samples": samples}
        path.write_text(json.dumps(document, indent=4), encoding="utf-8")
    items = []
    for i in range(500):
        name, negated = f"Rex{i}", i % 2 == 1
        conclusion = f"{name} is {'not ' if negated else ''}blue."
        items.append({"id": f"ProntoQA_{i + 1}",
                      "context": f"Each gorpus is a lempus. Lempuses are {'not ' if negated else ''}blue. "
                                 f"{name} is a gorpus.",
                      "question": f"Is the following statement true or false? {name} is blue.",
                      "options": ["A) True", "B) False"], "answer": "B" if negated else "A",
                      "explanation": [f"{name} is a gorpus.", "Each gorpus is a lempus.", f"{name} is a lempus.",
                                      f"Lempuses are {'not ' if negated else ''}blue.", conclusion]})
    (root / "prontoqa").mkdir()
    (root / "prontoqa" / "dev.json").write_text(json.dumps(items, indent=4), encoding="utf-8")
    return root
