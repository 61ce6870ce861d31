"""The package's layers (README, "How the code is laid out"): each imports only the layers below it, and the
evaluation layer is pure — it reads no profile and writes no file."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "finelogic"
# Higher imports lower, never the other way. baselines and sft sit on eval (they score with it); the
# study in units (study.py) sits on runs; the lm-evaluation-harness tasks read what finelogic eval reads.
LAYER = {"book": 9, "study": 8, "evaluate": 8, "lm_eval_tasks": 8, "runs": 7, "baselines": 6, "sft": 6, "eval": 5, "prompts": 4, "paper": 4,
         "models": 3, "data": 2, "logic": 1, "config": 0, "files": 0, "memo": 1, "profiles": 0,
         "typed_config": 0, "store": 0}
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


def _module_name(path: Path, package: Path) -> str:
    parts = (package.name, *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_cycles(package: Path) -> list[list[str]]:
    """Cycles in the graph of ``package``'s modules, drawn from every ``import`` (also those inside
    functions: a deferred import still ties the two modules together), within a folder and across."""
    modules = {_module_name(p, package): p for p in package.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package.name):
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith(package.name + ".")]
            edges[name] |= {t for t in targets if t in modules and t != name and not modules[t].name == "__init__.py"}
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    return cycles


def test_no_module_imports_itself_back_through_others():
    assert import_cycles(PACKAGE) == []


def test_a_planted_cycle_within_a_folder_is_found(tmp_path):
    package = tmp_path / "finelogic"
    (package / "book").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "book" / "__init__.py").write_text("")
    (package / "book" / "runner.py").write_text("from finelogic.book.handouts import TEACHING\n")
    (package / "book" / "handouts.py").write_text("def out():\n    from finelogic.book.runner import run\n")
    (package / "book" / "tables.py").write_text("import finelogic.book.handouts\n")
    assert import_cycles(package) == [["finelogic.book.handouts", "finelogic.book.runner", "finelogic.book.handouts"]]


def test_the_modules_a_results_page_reads_with_do_not_load_torch():
    """A page reads its family's run and the study's committed tables; loading torch for that cost every
    page ~3 s of a cached book rebuild (measured at ea6af9c: 03_depth 8.0 s → 4.8 s once train.py's torch
    import moved into the functions that train)."""
    import subprocess
    import sys

    modules = ["finelogic.runs.registry", "finelogic.runs.accuracy", "finelogic.runs.depth",
               "finelogic.runs.soundness", "finelogic.runs.probing", "finelogic.runs.supervision",
               "finelogic.runs.claims", "finelogic.study", "finelogic.book.study_view", "finelogic.book.figures"]
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "    if 'torch' in sys.modules:\n"
            "        print(name)\n"
            "        break\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent)
    assert out.stdout.strip() == "", f"importing {out.stdout.strip()} loads torch"
