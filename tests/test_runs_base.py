"""What every family's run shares: profile resolution, handed-in backends, provenance, write/read."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest

from finelogic.config import safe_name
from finelogic.models.spec import parse_model
from finelogic.runs.base import Provenance, Run, open_models, resolve


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


def test_overrides_replace_profile_settings_and_unknown_names_are_refused():
    section = resolve("smoke", "accuracy", {"settings": ["CoT"], "models": None})
    assert section["settings"] == ["CoT"] and section["models"] == ("embedded",)  # None keeps the profile's
    with pytest.raises(ValueError, match=r"unknown setting\(s\) setings.*settings"):
        resolve("smoke", "accuracy", {"setings": ["CoT"]})


def test_handed_in_backends_are_used_as_given_and_unused_ones_are_an_error():
    scripted = object()
    (spec, backend), = open_models(["embedded"], {"embedded": scripted})
    assert backend is scripted and spec.name == "SmolLM2-135M-Instruct"
    (spec, backend), = open_models(["my-script"], {"my-script": scripted})
    assert backend is scripted and spec.model_id == "given:my-script"
    with pytest.raises(ValueError, match="'other'.*does not use"):
        open_models(["my-script"], {"my-script": scripted, "other": scripted})


def test_model_specs_name_the_model_not_the_server():
    assert parse_model("openai:meta-llama/Llama-3.1-8B-Instruct@http://127.0.0.1:8000/v1").model_id == \
        parse_model("openai:meta-llama/Llama-3.1-8B-Instruct@http://127.0.0.1:9123/v1").model_id
    assert parse_model("random-init:3").model_id != parse_model("random-init:4").model_id
    with pytest.raises(ValueError, match="random-init:<seed>"):
        parse_model("gguf:model.bin")


def test_file_names_from_model_names_stay_inside_their_folder():
    assert safe_name("meta-llama/Llama-3.1-8B-Instruct-Direct") == "meta-llama_Llama-3.1-8B-Instruct-Direct"
    assert safe_name("../../etc/passwd") == "etc_passwd"
    with pytest.raises(ValueError):
        safe_name("///")
