"""The supervision run in the smoke profile: four styles and LogiPT trained and checked; the run hands the
checkpoints on, and the accuracy run evaluates them beside the base model.

The styles are fine-tuned from a random-init stand-in of the embedded model's architecture cut to 2 blocks of
width 64 (``benchmarks/standin.py``): the run's machinery is what is checked here; the book build trains the
profile's own base model in every style."""
from __future__ import annotations

import pytest

from model_fixtures import model_cache  # noqa: F401  (fixture)
from standin import standin_checkpoints

pytestmark = pytest.mark.slow


def test_smoke_supervision_run_trains_every_style_and_hands_its_checkpoints_to_the_accuracy_run(
        model_cache, tmp_path, monkeypatch):
    import torch

    from finelogic.runs import accuracy, supervision
    from test_roundtrip import same_run

    torch.set_num_threads(1)
    base = standin_checkpoints(tmp_path / "standin", count=1)[0]  # from the test cache's converted model
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))  # fresh checkpoints, same converted model
    (tmp_path / "cache" / "models").mkdir(parents=True)
    (tmp_path / "cache" / "models" / "smollm2-135m-instruct-f32").symlink_to(
        model_cache / "models" / "smollm2-135m-instruct-f32")
    run = supervision.run("smoke", seed=0, base_model=f"ckpt:{base}")
    assert list(run.training["setting"]) == ["SFT-NL", "SFT-Symb-Struct", "SFT-Symb-Filter", "SFT-Symb-Direct",
                                             "LogiPT"]
    assert (run.training["steps"] == 2).all() and (run.training["examples"] == 6).all()
    assert list(run.checks["style"]) == ["NL", "Symb-Struct", "Symb-Filter", "Symb-Direct"]
    assert (run.checks["failing"] == 0).all() and (run.checks["lines"] > run.checks["examples"]).all()
    assert run.examples["LogiPT"][0]["messages"][-1]["content"].rstrip().endswith("__")
    assert len({t.path for t in run.trained}) == 5
    assert run.provenance.models[0] == base.name and run.provenance.n == 5 * 6

    run.write(tmp_path / "results")
    back = supervision.SupervisionRun.read(tmp_path / "results")
    assert same_run(back, run)  # every table, the base model and the training settings read back equal
    assert back.figure4["style"].tolist() == ["NL", "Symb-Struct", "Symb-Filter", "Symb-Direct", "LogiPT"]
    # the fine-tuned models, as the evaluation families open them (found in this cache)
    assert [(spec.name, setting) for spec, setting in back.checkpoints()] == [
        ("SFT-NL", "CoT"), ("SFT-Symb-Struct", "CoT"), ("SFT-Symb-Filter", "CoT"), ("SFT-Symb-Direct", "CoT"),
        ("LogiPT", "Direct")]

    again = supervision.run("smoke", seed=0, base_model=f"ckpt:{base}")
    assert all(t.cached for t in again.trained)  # checkpoints reused, not retrained

    # The accuracy run evaluates each checkpoint under its training prompt on the profile's FLD items, beside
    # the base model; the model column is the base model, as in the paper's tables.
    evaluated = accuracy.run("smoke", seed=0, supervision_run=back,
                             fld={"n": 2, "depths": (1,)}, prontoqa_generated={"n": 0}, limit=0)
    assert evaluated.records.groupby("setting").size().to_dict() == {
        "CoT": 2, "Direct": 2, "LogiPT": 2, "SFT-NL": 2, "SFT-Symb-Direct": 2, "SFT-Symb-Filter": 2,
        "SFT-Symb-Struct": 2}
    assert set(evaluated.records["model"]) == {"SmolLM2-135M-Instruct"}
