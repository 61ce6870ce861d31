"""The rehearsal's real slice (finelogic.rehearsal.real_slice): a slice of the paper profile's families against
llama.cpp's server with the embedded model, through the OpenAI backend."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from model_fixtures import model_cache  # noqa: F401 (fixture)

from finelogic.data.stored import generate_stored
from finelogic.runs import accuracy
from finelogic.rehearsal import rehearse
from finelogic.rehearsal.real_slice import in_process, served, slice_context
from finelogic.runs import registry

def slice_plan(family, fraction, url, model, **paths):
    return registry.family(family).rehearsal_plan(slice_context(fraction, url, model, **paths))


SERVER_NAMES = {"real-slice:Llama-3.1-8B-Instruct", "real-slice:Qwen-2.5-7B-Instruct", "real-slice:GPT-4o",
                "real-slice:DeepSeek-R1"}


def test_the_slice_is_the_first_ceil_fraction_and_names_every_model_real_slice(tmp_path):
    ctx = slice_context(0.01, "u", "m", embedded=tmp_path, standin=tmp_path)
    assert [ctx.sliced(n) for n in (1100, 204, 390, 500, 1, 0)] == [11, 3, 4, 5, 1, 1]
    plan = slice_plan("accuracy", 0.01, "http://127.0.0.1:9/v1", "smollm2", embedded=tmp_path, standin=tmp_path)
    models = plan["overrides"]["models"]
    assert {m["name"] for m in models} == SERVER_NAMES
    assert {m["model"] for m in models} == {"smollm2"} and {m["kind"] for m in models} == {"openai"}
    assert [m.get("scorer") for m in models] == [None, None, "api", "api"]  # the profile's released scorers kept
    assert plan["overrides"]["generation"]["max_new_tokens"] == 32 and plan["overrides"]["first_fraction"] == 0.01
    assert "capped at 32 (the profile: 3,072)" in plan["note"]
    assert served("embedded", "u", "m")["options"]["extra_body"] == {"repeat_penalty": 1.0}
    assert in_process("gpt2", tmp_path) == {"name": "real-slice:gpt2 (embedded, in process)", "kind": "ckpt",
                                            "path": str(tmp_path)}
    depth = slice_plan("depth", 0.01, "http://127.0.0.1:9/v1", "smollm2", embedded=tmp_path, standin=tmp_path)
    assert depth["overrides"] == plan["overrides"]  # the accuracy run's key: depth reads the slice's accuracy run
    probing = slice_plan("probing", 0.01, "u", "m", embedded=tmp_path, standin=tmp_path)["overrides"]
    assert (probing["n_train"], probing["n_test"]) == (math.ceil(4.5), 2)  # at least 2 test problems
    with pytest.raises(ValueError, match="fraction"):
        slice_plan("accuracy", 1.5, "u", "m", embedded=tmp_path, standin=tmp_path)


@pytest.mark.slow  # 2-3 min at load 12 on 2 cores (server start, 3 answers, the judge); idle: not measured
@pytest.mark.server
def test_accuracy_and_soundness_slices_run_against_the_llama_cpp_server(model_cache, tmp_path):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    # The paper's FLD test set, stored once in the test cache (the slice's soundness pairs records with it).
    generate_stored("fld_paper_test", seed=0, scale=1.0)
    paper = accuracy.PROFILES["paper"].prontoqa_generated
    generate_stored("prontoqa", seed=0, n=paper.n, hops=paper.hops)
    overrides = {"accuracy": {"settings": ("Direct",)},
                 "soundness": {"quality": {"n": 4, "depths": (4, 5, 6, 7)}, "llm_quality_steps": 2}}
    made = rehearse(["accuracy", "soundness"], real_slice=0.001, stand_ins=False, root=tmp_path,
                    slice_tokens=8, slice_overrides=overrides)
    assert made.errors == {}
    report = made.report.set_index(["family", "stage"])
    assert list(report.index) == [("accuracy", "real-slice"), ("accuracy", "real-slice write"),
                                  ("soundness", "real-slice"), ("soundness", "real-slice write")]
    assert report.loc[("accuracy", "real-slice"), "note"].startswith("first 0.001 of each set; every model is the "
                                                                     "llama.cpp server")
    records = pd.read_csv(tmp_path / "real-slice" / "paper" / "accuracy" / "records.csv")
    assert set(records["model"]) == SERVER_NAMES
    # 2 FLD items and 1 ProntoQA item (ceil(0.001 n)), one setting, four model names for one server model.
    assert len(records) == 3 * 4 and records["response"].fillna("").str.len().gt(0).any()
    assert report.loc[("accuracy", "real-slice"), "requests"] == 3  # the other three names are cache hits
    assert report.loc[("accuracy", "real-slice"), "cache_hits"] == 9
    assert report.loc[("soundness", "real-slice"), "requests"] >= 2  # the judge, through the same server
    quality = pd.read_csv(tmp_path / "real-slice" / "paper" / "soundness" / "quality.csv")
    assert "LLM (real-slice:GPT-4.1-mini)" in set(quality.iloc[:, 0])
