"""The supervision run in the smoke profile: four styles trained, checked and evaluated beside the base model."""
from __future__ import annotations

import pytest

from model_fixtures import model_cache  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow


def test_smoke_supervision_run_trains_every_style_and_evaluates_it_beside_the_base(model_cache, tmp_path, monkeypatch):
    import torch

    from finelogic.runs import supervision
    from finelogic.runs.results import same_run

    torch.set_num_threads(1)
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))  # fresh checkpoints, same converted model
    (tmp_path / "cache" / "models").mkdir(parents=True)
    (tmp_path / "cache" / "models" / "smollm2-135m-instruct-f32").symlink_to(
        model_cache / "models" / "smollm2-135m-instruct-f32")
    run = supervision.run("smoke", seed=0)
    assert list(run.training["setting"]) == ["SFT-NL", "SFT-Symb-Struct", "SFT-Symb-Filter", "SFT-Symb-Direct",
                                             "LogiPT"]
    assert (run.training["steps"] == 2).all() and (run.training["examples"] == 6).all()
    assert list(run.checks["style"]) == ["NL", "Symb-Struct", "Symb-Filter", "Symb-Direct"]
    assert (run.checks["failing"] == 0).all() and (run.checks["lines"] > run.checks["examples"]).all()
    assert run.examples["LogiPT"][0]["messages"][-1]["content"].rstrip().endswith("__")
    # Base rows under both prompts, four SFT rows and LogiPT, each on the same two FLD items; the model
    # column is the base model, as in the paper's tables.
    assert run.records.groupby("setting").size().to_dict() == {
        "CoT": 2, "Direct": 2, "LogiPT": 2, "SFT-NL": 2, "SFT-Symb-Direct": 2, "SFT-Symb-Filter": 2,
        "SFT-Symb-Struct": 2}
    assert set(run.records["model"]) == {"SmolLM2-135M-Instruct"}
    assert len({t.path for t in run.trained}) == 5
    assert run.steps["sample"].nunique() == 14  # every FLD response judged step by step
    assert run.provenance.models[0] == "SmolLM2-135M-Instruct" and run.provenance.n == 2

    run.write(tmp_path / "results")
    back = supervision.SupervisionRun.read(tmp_path / "results")
    assert same_run(back, run)  # every table, the test sets, the base model and both configs read back equal
    assert back.figure4["style"].tolist() == ["NL", "Symb-Struct", "Symb-Filter", "Symb-Direct", "LogiPT"]
    # the fine-tuned models, as the other families open them (found in this cache)
    assert [(spec.name, setting) for spec, setting in back.fine_tuned()] == [
        ("SFT-NL", "CoT"), ("SFT-Symb-Struct", "CoT"), ("SFT-Symb-Filter", "CoT"), ("SFT-Symb-Direct", "CoT"),
        ("LogiPT", "Direct")]

    again = supervision.run("smoke", seed=0)
    assert all(t.cached for t in again.trained)  # checkpoints reused, not retrained
    assert again.provenance.model_calls == 0  # and every answer read from the cache
