"""The TRL path: two steps on a random-init model of the embedded architecture in one process, the loss on
the assistant turn only, a checkpoint the other families open, and a run killed mid-way that resumes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="TRL is the optional [train] extra: pip install -e '.[train]'")

from finelogic.runs.training import train_style  # noqa: E402
from finelogic.sft.trl_train import TRAINING_RECORD, saved_whole  # noqa: E402

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
EXAMPLES = [
    {"id": f"ex{i}", "messages": [
        {"role": "system", "content": "Answer with the label."},
        {"role": "user", "content": f"Facts: fact1: the cat {i} is red.\nHypothesis: the cat {i} is red."},
        {"role": "assistant", "content": "fact1 -> hypothesis;\n__PROVED__"}]}
    for i in range(8)
]
FLOAT32 = {"dtype": "float32"}


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> str:
    from standin import standin_checkpoints

    return "ckpt:" + str(standin_checkpoints(tmp_path_factory.mktemp("standin"), count=1)[0])


def test_two_steps_in_one_process_make_a_checkpoint_the_families_open(standin, tmp_path):
    from transformers import AutoTokenizer

    from finelogic.models.spec import open_model
    from finelogic.sft.train import IGNORE_INDEX, encode_example

    out = tmp_path / "nl"
    trained = train_style("NL", profile="smoke", base=standin, out=out, examples=EXAMPLES[:4], max_steps=2,
                          train_overrides=FLOAT32)
    assert trained.steps == 2 and len(trained.losses) == 2 and trained.processes == 1
    record = json.loads((out / "train_log.json").read_text())
    assert record["trainer"] == "trl" and record["steps"] == 2 and record["examples"] == 4
    assert (out / "config.json").is_file() and (out / TRAINING_RECORD).is_file()
    # Smoke batches are 2 examples: 2 steps see the 4 examples once, as our loop encodes them: the same
    # tokens, the loss on its targets (answer + end of turn).
    tokenizer = AutoTokenizer.from_pretrained(standin.removeprefix("ckpt:"))
    ours = [encode_example(tokenizer, e, 256) for e in EXAMPLES[:4]]
    assert trained.target_tokens == sum(sum(l != IGNORE_INDEX for l in e.labels[1:]) for e in ours)
    assert trained.tokens == sum(len(e.input_ids) for e in ours)
    backend = open_model(trained.spec, batch_size=2)
    assert backend is not None and trained.spec.kind == "ckpt"


def test_a_folder_trained_on_other_data_is_not_resumed(standin, tmp_path):
    out = tmp_path / "nl"
    train_style("NL", profile="smoke", base=standin, out=out, examples=EXAMPLES[:4], max_steps=1, save_steps=1,
                train_overrides=FLOAT32)
    with pytest.raises(ValueError, match="other data or config"):
        train_style("NL", profile="smoke", base=standin, out=out, examples=EXAMPLES[4:], max_steps=1,
                    train_overrides=FLOAT32)


KILLED_RUN = """
import json, sys
from finelogic.runs.training import train_style
train_style("NL", profile="smoke", base=sys.argv[1], out=sys.argv[2], examples=json.loads(open(sys.argv[3]).read()),
            max_steps=8, save_steps=1, train_overrides={"dtype": "float32"})
"""


def test_killed_after_two_checkpoints_resumes_to_the_same_losses(standin, tmp_path):
    data = tmp_path / "examples.json"
    data.write_text(json.dumps(EXAMPLES))
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen([sys.executable, "-c", KILLED_RUN, standin, str(out), str(data)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not saved_whole(out / "checkpoint-2"):  # its trainer_state.json, written last, parses
        assert process.poll() is None, "the run ended before its second checkpoint"
        assert time.monotonic() < deadline, "no second checkpoint in 300 s"
        time.sleep(0.1)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert not (out / "train_log.json").exists()  # killed before the end

    resumed = train_style("NL", profile="smoke", base=standin, out=out, examples=EXAMPLES, max_steps=8,
                          save_steps=1, train_overrides=FLOAT32)
    assert resumed.resumed_from is not None and int(resumed.resumed_from.split("-")[1]) >= 2
    assert resumed.steps == 8 and len(resumed.losses) == 8
    straight = train_style("NL", profile="smoke", base=standin, out=tmp_path / "straight", examples=EXAMPLES,
                           max_steps=8, save_steps=1, train_overrides=FLOAT32)
    assert resumed.losses == pytest.approx(straight.losses, rel=1e-4)


def test_the_train_command_trains_a_profile_style_and_resumes(standin, tmp_path, capsys):
    from finelogic.book.cli import main

    out = tmp_path / "cli"
    command = ["train", "--style", "Symb-Direct", "--profile", "smoke", "--base", standin, "--out", str(out),
               "--max-steps", "1", "--save-steps", "1"]
    assert main(command) == 0
    assert f"open it as ckpt:{out}" in capsys.readouterr().out
    record = json.loads((out / "train_log.json").read_text())
    assert record["name"] == "SFT-Symb-Direct" and record["resumed_from"] is None
    assert main(command) == 0  # the same command again: resumes from checkpoint-1 (nothing left to train)
    assert json.loads((out / "train_log.json").read_text())["resumed_from"] == "checkpoint-1"


def test_bf16_autocast_reaches_trl_on_a_cpu_only_when_asked(tmp_path):
    from finelogic.sft.train import TrainConfig
    from finelogic.sft.trl_train import sft_arguments

    def bf16(**config):
        return sft_arguments(TrainConfig(**config), processes=1, paper_recipe=False, out=tmp_path,
                             save_steps=None, cuda=False)["bf16"]

    assert bf16() is False  # float32 weights and products, as the CPU rehearsal has always trained
    assert bf16(dtype="bfloat16") is False  # bfloat16 weights are the GPUs' (the CPU loads float32)
    assert bf16(autocast="bfloat16") is True  # float32 weights, products in bfloat16 (Trainer's CPU autocast)
