"""The study in units (finelogic.study), run for real in the smoke profile: each unit is written on its own, the
units done are merged into one set of family runs, and a unit made with another config is refused."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from model_fixtures import model_cache  # noqa: F401  (fixture)


def test_unknown_unit_names_the_units():
    from finelogic import study

    with pytest.raises(ValueError, match="SFT-NL.*SFT-Symb-Direct"):
        study.run_unit("SFT-Prose", profile="smoke")
    assert study.unit_names("study") == ("base", "SFT-NL", "SFT-Symb-Struct", "SFT-Symb-Filter", "SFT-Symb-Direct")


def test_assembling_without_units_says_what_to_run(tmp_path):
    from finelogic import study

    with pytest.raises(study.UnitError, match="finelogic study"):
        study.assemble("smoke", root=tmp_path / "units")


def test_code_changed_tells_a_changed_file_from_an_unchanged_one():
    import subprocess

    from finelogic import study
    from finelogic.config import repo_root

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo_root(), capture_output=True, text=True).stdout.strip()
    if not head:
        pytest.skip("not a git checkout")
    # The first commit that made this test file (the study module came with it) had no finelogic/study.py before.
    first = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", "finelogic/study.py"],
                           cwd=repo_root(), capture_output=True, text=True).stdout.split()
    assert study.code_changed(head, ["finelogic/study.py"]) in (False, True)  # True only with local edits
    if first:
        parent = first[-1] + "~1"
        assert study.code_changed(parent, ["finelogic/study.py"]) is True
    assert study.code_changed("abc+dirty", ["finelogic"]) is None
    assert study.code_changed("0000000000", ["finelogic"]) is None


@pytest.mark.slow
def test_units_run_alone_and_merge_into_one_study(model_cache, tmp_path, monkeypatch):
    import torch

    from finelogic import study
    from finelogic.eval.claims import NOT_TESTABLE
    from finelogic.runs import accuracy, claims, supervision

    torch.set_num_threads(1)  # the shared test cache: a checkpoint or answer made by another test is reused
    units = tmp_path / "units"
    base = study.run_unit("base", profile="smoke", root=units)
    assert base.families == ("accuracy", "probing") and base.load_samples >= 2
    assert set(base.stages) == {"accuracy", "probing"} and base.seconds >= sum(base.stages.values()) - 1

    # One unit is enough to assemble: the claims that need a fine-tuned model are not testable.
    partial = study.assemble("smoke", root=units, out=tmp_path / "out")
    assert partial.missing == ("SFT-NL", "SFT-Symb-Struct", "SFT-Symb-Filter", "SFT-Symb-Direct")
    assert (partial.runs[claims.FAMILY].verdicts["verdict"] != "reproduced").all()

    tuned = study.run_unit("SFT-NL", profile="smoke", root=units)
    assert tuned.families == ("supervision", "accuracy", "probing")
    unit_acc = accuracy.AccuracyRun.read(units / "SFT-NL" / "accuracy")
    assert set(unit_acc.records["setting"]) == {"SFT-NL"}  # only the fine-tuned model, named by its base
    assert set(unit_acc.records["model"]) == {"SmolLM2-135M-Instruct"}

    made = study.assemble("smoke", root=units, out=tmp_path / "out")
    assert made.missing == ("SFT-Symb-Struct", "SFT-Symb-Filter", "SFT-Symb-Direct")
    merged = accuracy.AccuracyRun.read(tmp_path / "out" / "accuracy")
    base_acc = accuracy.AccuracyRun.read(units / "base" / "accuracy")
    assert len(merged.records) == len(base_acc.records) + len(unit_acc.records)
    # Table 2's cells of the merged run are those of each unit.
    cells = pd.concat([base_acc.summary, unit_acc.summary], ignore_index=True)
    assert merged.summary.sort_values(list(accuracy.TABLE2_KEYS)).reset_index(drop=True).equals(
        cells.sort_values(list(accuracy.TABLE2_KEYS)).reset_index(drop=True))
    sup = supervision.SupervisionRun.read(tmp_path / "out" / "supervision")
    assert sup.training["setting"].tolist() == ["SFT-NL"]
    manifest = pd.read_csv(tmp_path / "out" / study.MANIFEST)
    assert manifest["unit"].tolist() == ["base", "SFT-NL"]
    assert {"commit", "started", "finished", "seconds", "load_mean", "stages"} <= set(manifest.columns)
    for family in ("depth", "soundness", "probing", "claims"):
        assert (tmp_path / "out" / family / "run.json").is_file()

    # A unit made with another config than the profile's now is left out (as if not yet run), named with the
    # setting and the command that makes it again, and kept in the manifest as left out.
    other = study.assemble("smoke", root=units, out=tmp_path / "other", overrides={"supervision": {"fld_n": 8}})
    assert "SFT-NL" in other.missing and "base" not in other.missing
    assert re.search(r"SFT-NL.*supervision.*fld_n.*`finelogic study --units SFT-NL --again`", other.left_out["SFT-NL"])
    listed = pd.read_csv(tmp_path / "other" / study.MANIFEST).set_index("unit")
    assert listed["in_study"].to_dict() == {"base": True, "SFT-NL": False}
    # The committed manifest names the unit's folder from the study's folder, not from this machine's root.
    assert str(tmp_path) not in listed.loc["SFT-NL", "left_out"]
    assert f"({units.name}/SFT-NL/supervision)" in listed.loc["SFT-NL", "left_out"]
    assert accuracy.AccuracyRun.read(tmp_path / "other" / "accuracy").records["setting"].ne("SFT-NL").all()
    # When no unit is current, nothing is assembled: the error names each unit and why.
    with pytest.raises(study.UnitError, match=r"no study unit was made with the profile's current config: .*base"
                                              r".*batch_size.*SFT-NL"):
        study.assemble("smoke", root=units, out=tmp_path / "none", overrides={"accuracy": {"batch_size": 7}})
    # Without the base unit the study still assembles; the comparisons with the base model are not testable.
    kept = (units / "base" / study.UNIT_FILE).read_text()
    (units / "base" / study.UNIT_FILE).unlink()
    alone = study.assemble("smoke", root=units, out=tmp_path / "alone")
    assert alone.missing[0] == "base" and "SFT-NL" not in alone.missing
    verdicts = alone.runs[claims.FAMILY].verdicts.set_index("claim")["verdict"]
    assert verdicts.iloc[0] == NOT_TESTABLE  # fine-tuning against the base model: no base rows
    (units / "base" / study.UNIT_FILE).write_text(kept)
    # A unit whose unit.json is missing (it stopped before the end) is not done.
    (units / "SFT-NL" / study.UNIT_FILE).unlink()
    assert list(study.done_units("smoke", units)) == ["base"]
    assert json.loads((units / "base" / study.UNIT_FILE).read_text())["unit"] == "base"


def test_a_unit_made_before_a_setting_existed_counts_as_made_with_its_default():
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.upstream import differing_config

    made = Provenance("accuracy", "study", 0, settings={"batch_size": 32})  # recorded before the new setting
    defaults = {"batch_size": 16, "fine_tuned_generation": {}}
    assert differing_config({"batch_size": 32, "fine_tuned_generation": {}}, made, defaults) == []
    assert differing_config({"batch_size": 32, "fine_tuned_generation": {"max_new_tokens": 768}}, made,
                              defaults) == ["fine_tuned_generation"]
    assert differing_config({"batch_size": 32, "fine_tuned_generation": {}}, made) == ["fine_tuned_generation"]


def test_changing_the_fine_tuned_models_token_cap_asks_to_remake_the_style_units_not_the_base(monkeypatch):
    from dataclasses import replace

    from conftest import REPO
    from finelogic import study
    from finelogic.runs import accuracy

    root = REPO / "results" / "study" / "units"
    made = study.done_units("study", root)
    if "base" not in made or "SFT-NL" not in made:
        pytest.skip("the committed study has no base or SFT-NL unit")
    recorded = json.loads((root / "SFT-NL" / "accuracy" / "run.json").read_text())
    cap = (recorded["provenance"]["settings"].get("fine_tuned_generation") or {}).get("max_new_tokens")
    for tuned in ({"max_new_tokens": cap} if cap else {}, {"max_new_tokens": 999}):
        monkeypatch.setitem(accuracy.PROFILES, "study", replace(accuracy.PROFILES["study"],
                                                                fine_tuned_generation=tuned))
        study._read_unit(root / "base", made["base"], "study", 0, None)  # decodes no fine-tuned model
    # As the unit was made: accepted; with another cap: named, with the command that makes it again.
    with pytest.raises(study.UnitError, match=r"SFT-NL: its accuracy run .* \(fine_tuned_generation\); make it "
                                              r"again with `finelogic study --units SFT-NL --again`"):
        study._read_unit(root / "SFT-NL", made["SFT-NL"], "study", 0, None)
    monkeypatch.setitem(accuracy.PROFILES, "study", replace(accuracy.PROFILES["study"],
                                                            fine_tuned_generation={"max_new_tokens": cap} if cap else {}))
    study._read_unit(root / "SFT-NL", made["SFT-NL"], "study", 0, None)
