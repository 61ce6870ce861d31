"""The LLaMA-Factory export: records, the dataset_info.json entry and the training YAMLs in the format
LLaMA-Factory documents (data/README.md: sharegpt formatting, OpenAI-style messages with named tags)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from finelogic.book.cli import main
from finelogic.sft.export import dataset_name, export_llamafactory, llamafactory_records
from finelogic.sft.recipes import value

REPO = Path(__file__).resolve().parents[1]
SYSTEM = {"role": "system", "content": "Conclude with __PROVED__ or __DISPROVED__."}
EXAMPLES = [{"id": f"ex{i}", "style": "NL", "meta": {"label": "PROVED"},
             "messages": [SYSTEM, {"role": "user", "content": f"Facts: fact1: A{i}.\nHypothesis: A{i}."},
                          {"role": "assistant", "content": "fact1 -> hypothesis\n__PROVED__"}]} for i in range(3)]


def test_records_keep_turns_and_ids_only():
    records = llamafactory_records(EXAMPLES)
    assert [r["id"] for r in records] == ["ex0", "ex1", "ex2"]
    assert set(records[0]) == {"id", "messages"}
    assert [m["role"] for m in records[0]["messages"]] == ["system", "user", "assistant"]
    assert all(set(m) == {"role", "content"} for m in records[0]["messages"])


@pytest.mark.parametrize("roles", [["system", "user"], ["user", "user", "assistant"], ["assistant"], []])
def test_records_refuse_turns_llamafactory_cannot_train_on(roles):
    bad = {"id": "bad1", "messages": [{"role": r, "content": "x"} for r in roles]}
    with pytest.raises(ValueError, match="bad1"):
        llamafactory_records([bad])


def test_export_writes_data_info_and_a_yaml_per_base_model(tmp_path):
    (tmp_path / "dataset_info.json").write_text(json.dumps({"other": {"file_name": "o.json"}}))
    written = export_llamafactory(EXAMPLES, "Symb-Struct", tmp_path)
    name = dataset_name("Symb-Struct")
    assert name == "finelogic_symb_struct"
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    assert set(info) == {"other", name}  # an existing entry is kept
    entry = info[name]
    assert entry["file_name"] == f"{name}.json" and (tmp_path / entry["file_name"]).is_file()
    assert entry["formatting"] == "sharegpt" and entry["columns"] == {"messages": "messages"}
    assert entry["tags"] == {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                             "assistant_tag": "assistant", "system_tag": "system"}
    data = json.loads(written["data"].read_text())
    assert isinstance(data, list) and len(data) == 3 and data[0]["messages"][2]["content"].endswith("__PROVED__")
    for base, template in (("llama3", "llama3"), ("qwen", "qwen")):
        config = yaml.safe_load(written[base].read_text())
        assert config["template"] == template and config["dataset"] == name
        assert config["dataset_dir"] == str(tmp_path)
        assert config["learning_rate"] == value("learning_rate") and config["cutoff_len"] == 2500
        assert config["deepspeed"] == "examples/deepspeed/ds_z3_config.json"


@pytest.mark.slow
def test_cli_exports_a_profile_style(tmp_path, capsys):
    assert main(["export-llamafactory", "--style", "NL", "--profile", "smoke", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "finelogic_nl.json").read_text())
    assert data and all(r["messages"][-1]["role"] == "assistant" for r in data)
    assert "finelogic_nl" in json.loads((tmp_path / "dataset_info.json").read_text())
    assert "train_NL_llama3.yaml" in capsys.readouterr().out


LF_PYTHON = os.environ.get("FINELOGIC_LLAMAFACTORY_PYTHON")


@pytest.mark.slow
@pytest.mark.skipif(not LF_PYTHON, reason="set FINELOGIC_LLAMAFACTORY_PYTHON to a Python with llamafactory "
                    "installed (a scratch venv: its pins conflict with this project's)")
def test_llamafactory_loads_the_export(tmp_path):
    """LLaMA-Factory's get_train_args parses both YAMLs and its get_dataset builds the set; the labels
    cover the assistant turn only (benchmarks/llamafactory_check.py)."""
    from standin import standin_checkpoints

    model = standin_checkpoints(tmp_path / "models", count=1)[0]  # a local tokenizer (SmolLM2's)
    export_llamafactory(EXAMPLES, "NL", tmp_path / "export")
    done = subprocess.run([LF_PYTHON, str(REPO / "benchmarks" / "llamafactory_check.py"),
                           str(tmp_path / "export"), "finelogic_nl", str(model)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "train_NL_llama3.yaml: template llama3, examples: 3" in done.stdout
    assert "train_NL_qwen.yaml: template qwen, examples: 3" in done.stdout
