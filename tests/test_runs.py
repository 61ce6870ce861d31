"""An accuracy run end to end with the embedded model: records written, a warm rerun makes no model calls."""
from __future__ import annotations

import pytest

from finelogic.models.spec import EMBEDDED_NAME, parse_model
from finelogic.runs import accuracy

pytestmark = pytest.mark.slow


def test_warm_rerun_of_the_smoke_accuracy_run_makes_no_model_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    # A fresh response cache (so the first run must call the model), sharing the converted model.
    from finelogic.config import cache_dir

    (tmp_path / "cache").mkdir()
    (cache_dir() / "models").mkdir(parents=True, exist_ok=True)
    (tmp_path / "cache" / "models").symlink_to(cache_dir() / "models")
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    first = accuracy.run("smoke", seed=11)
    assert first.provenance.model_calls > 0
    # smoke: 6 FLD + 2 generated ProntoQA items (FOLIO / Multi-LogiEval not present), 2 settings
    assert len(first.records) == 2 * (6 + 2)
    assert set(first.records["setting"]) == {"Direct", "CoT"}
    first.write()
    assert (tmp_path / "results" / "smoke" / "accuracy" / "records.csv").exists()

    again = accuracy.run("smoke", seed=11)
    assert again.provenance.model_calls == 0 and again.provenance.cache_hits > 0
    assert again.records["response"].tolist() == first.records["response"].tolist()


def test_model_specs_parse_from_strings_and_dicts(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)  # a served model's identity names its server
    assert parse_model("embedded").name == EMBEDDED_NAME and parse_model("embedded").path is None
    hf = parse_model("hf:Qwen/Qwen2.5-7B-Instruct")
    assert (hf.name, hf.kind, hf.path) == ("Qwen2.5-7B-Instruct", "hf", "Qwen/Qwen2.5-7B-Instruct")
    server = parse_model("openai:my-model@http://127.0.0.1:8000/v1")
    assert (server.kind, server.model, server.base_url) == ("openai", "my-model", "http://127.0.0.1:8000/v1")
    named = parse_model({"name": "GPT-4o", "kind": "openai", "model": "gpt-4o"})
    assert named.model_id == "openai:gpt-4o@https://api.openai.com/v1" and named.api_key_env == "OPENAI_API_KEY"
    assert parse_model("ckpt:/tmp/sft-nl").kind == "ckpt" and parse_model("random-init:7").seed == 7
    with pytest.raises(ValueError, match="expected 'embedded'"):
        parse_model("llama")
    with pytest.raises(ValueError, match="needs 'model'"):
        parse_model({"kind": "openai"})
