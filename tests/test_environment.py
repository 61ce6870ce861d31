"""The two ways to install (pip with pyproject.toml, conda with environment.yml) name the same things."""
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
    extras = project["optional-dependencies"]
    requirements = project["dependencies"] + extras["dev"] + extras["train"] + extras["lm-eval"]
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
