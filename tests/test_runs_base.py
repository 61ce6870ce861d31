"""What every family's run shares: profile resolution, handed-in backends, provenance, write/read."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest

from finelogic.config import safe_name
from finelogic.models.spec import parse_model
from finelogic.runs.backends import open_models
from finelogic.runs.base import resolve
from finelogic.runs.provenance import Provenance
from finelogic.runs.results import Run


@dataclass(frozen=True)
class ToyRun(Run):
    records: pd.DataFrame = None
    note: str = "not written"


def test_a_run_writes_its_tables_and_reads_them_back_with_their_types(tmp_path):
    records = pd.DataFrame({"id": ["a", "b"], "depth": pd.array([3, None], dtype="Int64"),
                            "correct": [True, False], "prediction": ["PROVED", None], "score": [0.5, 1.25]})
    run = ToyRun(Provenance("toy", "smoke", 0, settings={"n": 2, "depths": (1, 2)}, models=("m",), n=2),
                 records, note="kept in memory only")
    paths = run.write(tmp_path)
    assert sorted(p.name for p in paths) == ["records.csv", "run.json"]
    back = ToyRun.read(tmp_path)
    pd.testing.assert_frame_equal(back.records, records)  # values and column types
    assert back.records["depth"].isna().tolist() == [False, True] and back.records["correct"].dtype == bool
    assert back.provenance.settings == {"n": 2, "depths": [1, 2]} and back.provenance.models == ("m",)
    assert back.note == "not written"


def test_reading_a_folder_without_a_run_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        ToyRun.read(tmp_path)


def test_overrides_change_one_field_and_keep_the_profiles_others():
    from finelogic.runs import accuracy, supervision

    section = resolve(accuracy.PROFILES, "smoke", "accuracy", {"settings": ["CoT"], "models": None})
    assert section.settings == ("CoT",) and section.models == ("embedded",)  # None keeps the profile's
    # a nested section given as a mapping is merged field by field, not replaced
    section = resolve(accuracy.PROFILES, "tiny", "accuracy", {"generation": {"temperature": 0.5}})
    assert (section.generation.max_new_tokens, section.generation.temperature) == (96, 0.5)
    trained = resolve(supervision.PROFILES, "tiny", "sft", {"train": {"max_steps": 40}})
    assert (trained.train.max_steps, trained.train.lora_layers, trained.train.cutoff_len) == (40, 8, 512)
    # a section that names another generator is that generator's, not merged with the old one's fields
    other = resolve(accuracy.PROFILES, "paper", "accuracy", {"fld": {"name": "fld", "n": 3, "depths": [1]}})
    assert (other.fld.name, other.fld.n, other.fld.depths, other.fld.scale) == ("fld", 3, (1,), None)


@pytest.mark.parametrize("overrides, message", [
    ({"setings": ["CoT"]}, r"^accuracy\.setings: unknown key; the keys of accuracy are .*settings"),
    ({"generation": {"max_new_tokenz": 8}},
     r"^accuracy\.generation\.max_new_tokenz: unknown key; .*max_new_tokens"),
    ({"generation_by_setting": {"Directt": {"max_new_tokens": 8}}},
     r"^accuracy: generation_by_setting\.Directt: unknown setting; the settings are Direct, CoT"),
    ({"generation_by_setting": {"Direct": {"max_tokens": 8}}},
     r"generation_by_setting\.Direct\.max_tokens: unknown decoding key; .*max_new_tokens"),
    ({"baselines": {"Sel-Inf": {"roundz": 2}}}, r"baselines\.Sel-Inf\.roundz: unknown option; .*rounds"),
    ({"batch_size": "8"}, r"^accuracy\.batch_size: expected an integer, got '8'"),
    ({"fld": {"depths": [1, "deep"]}}, r"^accuracy\.fld\.depths\[1\]: expected an integer"),
    ({"limit": {"folo": 3}}, r"limit: unknown dataset 'folo'"),
    ({"prompt_layout": "paper"}, r"^accuracy\.prompt_layout: expected one of principled, released"),
    ({"prompt_layout": "paper_code_compat"},  # rename: keep
     r"^accuracy\.prompt_layout: expected one of principled, released \('paper_code_compat' is now called "  # rename: keep
     r"'released'\), got 'paper_code_compat'$"),  # rename: keep
])
def test_a_misspelled_or_ill_typed_setting_at_any_depth_names_its_path(overrides, message):
    from finelogic.runs import accuracy
    from finelogic.typed_config import ConfigError

    with pytest.raises(ConfigError, match=message):
        accuracy.run("smoke", **overrides)


def test_every_profile_of_every_family_is_a_valid_typed_value():
    from finelogic.profiles import PROFILE_NAMES
    from finelogic.runs.registry import FAMILIES
    from finelogic.typed_config import as_data, build

    for family in FAMILIES:
        for name in PROFILE_NAMES:
            settings = family.module.PROFILES[name]
            # what a run's provenance records builds the same settings back
            assert build(type(settings), as_data(settings), family.name) == settings


def test_handed_in_backends_are_used_as_given_and_unused_ones_are_an_error():
    scripted = object()
    (spec, backend), = open_models(["embedded"], {"embedded": scripted})
    assert backend is scripted and spec.name == "SmolLM2-135M-Instruct"
    (spec, backend), = open_models(["my-script"], {"my-script": scripted})
    assert backend is scripted and spec.model_id == "given:my-script"
    with pytest.raises(ValueError, match="'other'.*does not use"):
        open_models(["my-script"], {"my-script": scripted, "other": scripted})


def test_model_specs_name_the_model_and_its_server_never_its_credentials():
    assert parse_model("openai:meta-llama/Llama-3.1-8B-Instruct@http://127.0.0.1:8000/v1").model_id != \
        parse_model("openai:meta-llama/Llama-3.1-8B-Instruct@http://127.0.0.1:9123/v1").model_id
    assert parse_model("openai:m@HTTP://me:KEY@Host:8000/v1/?api_key=KEY").model_id == "openai:m@http://host:8000/v1"
    assert parse_model("random-init:3").model_id != parse_model("random-init:4").model_id
    with pytest.raises(ValueError, match="random-init:<seed>"):
        parse_model("gguf:model.bin")


def test_file_names_from_model_names_stay_inside_their_folder():
    assert safe_name("meta-llama/Llama-3.1-8B-Instruct-Direct") == "meta-llama_Llama-3.1-8B-Instruct-Direct"
    assert safe_name("../../etc/passwd") == "etc_passwd"
    with pytest.raises(ValueError):
        safe_name("///")


def test_a_checkout_whose_only_changes_are_results_records_a_clean_commit(tmp_path):
    """A study unit finishing in a checkout changes tracked files under results/; the next unit made there
    recorded "+dirty" and the book could not tell whether its code had changed since."""
    import subprocess

    from finelogic.runs.provenance import commit_of

    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "results" / "study").mkdir(parents=True)
    (tmp_path / "results" / "study" / "records.csv").write_text("id,correct\na,True\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    head = git("rev-parse", "--short=10", "HEAD").strip()
    assert commit_of(tmp_path) == head
    (tmp_path / "results" / "study" / "records.csv").write_text("id,correct\na,False\n")  # a unit's new rows
    (tmp_path / "results" / "study" / "new.csv").write_text("untracked\n")
    assert commit_of(tmp_path) == commit_of(tmp_path / "results") == head  # wherever in the checkout it is asked
    (tmp_path / "code.py").write_text("x = 2\n")  # the code itself changed: not the commit's code
    assert commit_of(tmp_path) == commit_of(tmp_path / "results") == head + "+dirty"
    plain = tmp_path.parent / f"{tmp_path.name}-plain"
    plain.mkdir()
    assert commit_of(plain) == "unknown"
