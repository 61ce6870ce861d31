"""Every notebook's parameters cell is readable by papermill's own parameter parser.

papermill reads a parameters cell line by line (``papermill.inspection.inspect_notebook``, which
``papermill --help-notebook`` and the runner's parameter documentation use); a line with more than one
``=`` (e.g. ``threads = None  # None = torch default``) is skipped with the warning "Unable to parse
line N", and that parameter disappears from the page's documented parameters. Each notebook must
document every variable its parameters cell assigns, with no such warning.
"""
from __future__ import annotations

import ast
import json
import logging
from pathlib import Path

import nbformat
import pytest
from papermill.inspection import inspect_notebook

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _parameters_source(path: Path) -> str:
    cells = [c for c in json.loads(path.read_text())["cells"] if "parameters" in c["metadata"].get("tags", [])]
    assert len(cells) == 1, f"{path.name}: {len(cells)} cells tagged parameters"
    return "".join(cells[0]["source"])


def _assigned(source: str) -> list[str]:
    """The names a parameters cell assigns, in order (what papermill should document)."""
    return [target.id for node in ast.parse(source).body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)]


def _inspect(source: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> tuple[list[str], list[str]]:
    """(parameter names papermill infers, papermill's warnings) for a notebook with this parameters cell."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": ["parameters"]})]
    path = tmp_path / "probe.ipynb"
    nbformat.write(notebook, path)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="papermill"):
        names = list(inspect_notebook(str(path)))
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("papermill")]
    return names, warnings


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_parameter_of_every_notebook_parses(path: Path, tmp_path: Path, caplog) -> None:
    source = _parameters_source(path)
    names, warnings = _inspect(source, tmp_path, caplog)
    assert warnings == []
    assert names == _assigned(source)
    assert names[:2] == ["profile", "seed"]


def test_the_real_notebooks_are_inspected_without_warnings(caplog) -> None:
    # The notebooks themselves, as papermill opens them (not only their parameters cells).
    with caplog.at_level(logging.WARNING, logger="papermill"):
        documented = {path.stem: list(inspect_notebook(str(path))) for path in NOTEBOOKS}
    assert [r.getMessage() for r in caplog.records if r.name.startswith("papermill")] == []
    assert "threads" in documented["05_probing"] and "threads" in documented["07_logicmark"]
    assert len(documented) >= 11


def test_the_old_probing_cell_is_caught(tmp_path: Path, caplog) -> None:
    # The line the book build warned about: two '=' in one line, so papermill drops `threads`.
    old = ('profile = "tiny"  # smoke | tiny | paper\nseed = 0\nsft_checkpoints = []  # checkpoints\n'
           "threads = None  # torch CPU threads; None = torch default (all cores); 1 can be faster\n")
    names, warnings = _inspect(old, tmp_path, caplog)
    assert warnings == ["Unable to parse line 4 'threads = None  # torch CPU threads; None = torch default "
                        "(all cores); 1 can be faster'."]
    assert names == ["profile", "seed", "sft_checkpoints"] != _assigned(old)


def test_the_runner_refuses_a_notebook_whose_parameter_line_papermill_cannot_read(tmp_path) -> None:
    from finelogic.book.runner import NotebookFailed, check_parameters

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell('profile = "tiny"\nseed = 0\nthreads = None  # None = torch default',
                                                metadata={"tags": ["parameters"]})]
    nbformat.write(notebook, tmp_path / "07_bad.ipynb")
    with pytest.raises(NotebookFailed, match=r"notebook 07_bad: .*Unable to parse line 3"):
        check_parameters(tmp_path / "07_bad.ipynb")
    assert check_parameters(REPO / "notebooks" / "07_logicmark.ipynb")[:2] == ["profile", "seed"]
