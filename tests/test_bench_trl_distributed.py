"""benchmarks/bench_trl_distributed.py: every style, LogiPT included, on 2 CPU processes through
``accelerate launch -m finelogic.runs.training`` (gloo), the first killed after its first checkpoint and resumed."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("trl", reason="TRL is the optional [train] extra: pip install -e '.[train]'")

from bench_trl_distributed import STYLES, launch_styles  # noqa: E402
from standin import standin_checkpoints  # noqa: E402

pytestmark = pytest.mark.slow


def test_every_style_trains_on_two_processes_and_the_killed_one_resumes(tmp_path, monkeypatch):
    checkpoint = standin_checkpoints(tmp_path / "standin", count=1)[0]  # from the test cache's embedded model
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))  # the children build the smoke sets here
    rows = launch_styles(tmp_path / "out", f"ckpt:{checkpoint}", profile="smoke", steps=2, timeout=600)
    assert [r["stage"] for r in rows] == [f"trl-2proc {STYLES[0]} killed", *(f"trl-2proc {s}" for s in STYLES)]
    assert all(r["status"] == "ok" for r in rows)
    for style in STYLES:
        record = json.loads((tmp_path / "out" / "sft-trl" / style / "train_log.json").read_text())
        assert record["processes"] == 2 and record["steps"] == 2 and record["trainer"] == "trl"
        assert record["trl_arguments"]["ddp_backend"] == "gloo"
    first = json.loads((tmp_path / "out" / "sft-trl" / STYLES[0] / "train_log.json").read_text())
    assert first["resumed_from"] == "checkpoint-1"
    assert "resumed from checkpoint-1" in rows[1]["note"]
