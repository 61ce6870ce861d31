"""Adding a notebook family is one module, one registry entry, one notebook: a toy family built here from
those three alone runs through the papermill runner (after its upstream family), and the registry finds it by
name."""
from __future__ import annotations

import json
import sys
import textwrap

import nbformat
import pandas as pd
import pytest

from finelogic.runs import registry

TOY = textwrap.dedent('''
    """Two toy families: ``toy`` counts to n; ``toy_total`` sums what ``toy`` counted (its upstream)."""
    from dataclasses import dataclass, field

    import pandas as pd

    from finelogic.runs.base import resolve
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.results import Run
    from finelogic.runs.upstream import find_run

    FAMILY = "toy"


    @dataclass(frozen=True)
    class ToyConfig:
        n: int = 3


    PROFILES = {"smoke": ToyConfig(n=4), "tiny": ToyConfig(), "paper": ToyConfig(n=100)}


    @dataclass(frozen=True)
    class ToyRun(Run):
        numbers: pd.DataFrame = field(default_factory=pd.DataFrame)


    def run(profile, *, seed=0, backends=None, **overrides):
        settings = resolve(PROFILES, profile, FAMILY, overrides)
        numbers = pd.DataFrame({"k": range(1, settings.n + 1)})
        return ToyRun(Provenance(FAMILY, profile, seed, settings=settings), numbers=numbers)
''')

TOTAL = textwrap.dedent('''
    from dataclasses import dataclass, field

    import pandas as pd

    import toy_family
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.results import Run
    from finelogic.runs.upstream import find_run

    FAMILY = "toy_total"
    PROFILES = toy_family.PROFILES


    @dataclass(frozen=True)
    class TotalRun(Run):
        total: pd.DataFrame = field(default_factory=pd.DataFrame)


    def run(profile, *, seed=0, toy_run=None, backends=None, **overrides):
        toy_run = toy_run or find_run(toy_family.ToyRun, toy_family.FAMILY, profile, seed, None)
        total = pd.DataFrame({"total": [int(toy_run.numbers["k"].sum())]})
        return TotalRun(Provenance(FAMILY, profile, seed, settings=toy_run.provenance.settings), total=total)
''')


def _notebook(path, module):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell('profile = "tiny"\nseed = 0', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(f"import {module}\nrun = {module}.run(profile, seed=seed)\nrun.write()\n"
                                          "print(run.tables())")]
    nbformat.write(nb, path)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    source = tmp_path / "notebooks"
    source.mkdir()
    (source / "toy_family.py").write_text(TOY)
    (source / "toy_total.py").write_text(TOTAL)
    _notebook(source / "01_toy.ipynb", "toy_family")
    _notebook(source / "02_toy_total.ipynb", "toy_total")
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.setenv("PYTHONPATH", str(source))
    import toy_family
    import toy_total

    families = (registry.Family(toy_family, "01_toy", toy_family.ToyRun, "toy"),
                registry.Family(toy_total, "02_toy_total", toy_total.TotalRun, "toy", upstream=("toy",)))
    yield source, families
    for name in ("toy_family", "toy_total"):
        sys.modules.pop(name, None)


@pytest.mark.slow  # two kernels start (~10-20 s)
def test_a_toy_family_runs_through_the_runner_after_its_upstream(toy, tmp_path):
    from finelogic.book.runner import run_notebooks
    from finelogic.config import results_dir

    source, families = toy
    records = run_notebooks("smoke", ["02_toy_total", "01_toy"], source_dir=source, output_dir=tmp_path / "out",
                            families=families, jobs=2)
    assert [r.notebook for r in records] == ["02_toy_total", "01_toy"] and not any(r.skipped for r in records)
    total = pd.read_csv(results_dir("smoke") / "toy_total" / "total.csv")
    assert total["total"].tolist() == [1 + 2 + 3 + 4]  # the smoke profile's n = 4, counted upstream first
    assert json.loads((tmp_path / "out" / "timings.json").read_text())["02_toy_total"]["profile"] == "smoke"


def test_the_registry_finds_a_toy_family_by_name_or_notebook_and_orders_it_after_its_upstream(toy):
    _, families = toy
    assert registry.family("toy_total", families).upstream == ("toy",)
    assert registry.family("01_toy", families).name == "toy"
    assert registry.names(registry.ordered(["toy_total", "toy"], families)) == ("toy", "toy_total")
    with pytest.raises(ValueError, match="unknown notebook family 'toys'; the families are toy, toy_total"):
        registry.family("toys", families)


def test_every_familys_upstream_comes_before_it_and_is_what_its_run_reads_in_every_profile(capsys):
    import inspect

    from finelogic.book.cli import main
    from finelogic.profiles import PROFILE_NAMES

    order = registry.names()
    for profile in PROFILE_NAMES:  # one graph: no family reads another in one profile only
        for place, entry in enumerate(registry.ordered()):
            takes = {p.removesuffix("_run") for p in inspect.signature(entry.run).parameters if p.endswith("_run")}
            assert takes == set(entry.upstream), (profile, entry.name)
            assert all(order.index(up) < place for up in entry.upstream), (profile, entry.name)
            assert not hasattr(entry.module, "reads")
    # supervision's checkpoints reach every family that evaluates or reads them
    upstream = {f.name: f.upstream for f in registry.FAMILIES}
    assert order[:2] == ("datasets", "supervision")
    assert upstream["accuracy"] == upstream["probing"] == ("supervision",)
    assert upstream["claims"] == ("supervision", "accuracy", "soundness", "probing")
    assert main(["list"]) == 0
    listed = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert listed["02_accuracy"] == "accuracy family, reads supervision"
    assert listed["08_claims"] == "claims family, reads supervision, accuracy, soundness, probing"
    assert list(listed)[:8] == [f"0{i}_{n}" for i, n in enumerate(
        ("datasets", "accuracy", "depth", "soundness", "probing", "supervision", "logicmark", "claims"), 1)]
