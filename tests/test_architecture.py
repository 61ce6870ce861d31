"""The package's layers (README, "How the code is laid out"): each imports only the layers below it, and the
evaluation layer is pure — it reads no profile and writes no file."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "finelogic"
# Higher imports lower, never the other way. baselines and sft sit on eval (they score with it); the
# rehearsal (stand-ins for a paper run) sits on runs.
LAYER = {"book": 9, "rehearsal": 8, "runs": 7, "baselines": 6, "sft": 6, "eval": 5, "prompts": 4, "paper": 4,
         "models": 3, "data": 2, "logic": 1, "config": 0, "files": 0, "memo": 1, "profiles": 0,
         "store": 0}
# What a pure module never calls: file writes and the places runs resolve.
WRITES = {"write_text", "write_bytes", "to_csv", "to_parquet", "savez", "save", "save_pretrained", "mkdir",
          "write_csv_atomic", "write_json_atomic", "write_text_atomic", "results_dir", "get_profile", "cache_dir"}


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("finelogic."):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("finelogic.")]
    return found


def _layer(module_path: Path) -> str:
    return module_path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def test_every_module_imports_only_layers_below_its_own():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE and path.name == "__init__.py":
            continue
        mine = _layer(path)
        for module in _imports(path):
            other = module.split(".")[1]
            if other != mine and LAYER.get(other, -1) >= LAYER[mine]:
                upward.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert upward == []


def test_evaluation_and_baselines_read_no_profile_and_write_no_file():
    offending = []
    for folder in ("eval", "baselines"):
        for path in (PACKAGE / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                name = (node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        else node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None)
                if name in WRITES or (name == "open" and any(isinstance(a, ast.Constant) and "w" in str(a.value)
                                                            for a in node.args[1:])):
                    offending.append(f"{path.relative_to(PACKAGE)}:{node.lineno} calls {name}")
    assert offending == []
