"""The fine-tuning loop: what the loss covers, that it learns, where checkpoints go, and what a crash leaves."""
from __future__ import annotations

import json

import pytest
import torch

from finelogic.sft.train import IGNORE_INDEX, TrainConfig, encode_example, fingerprint, train, with_overrides
from finelogic.config import safe_name
from finelogic.models.base import chat_token_ids
from finelogic.models.spec import parse_model
from model_fixtures import model_cache  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

EXAMPLES = [
    {"id": f"ex{i}", "messages": [
        {"role": "system", "content": "Answer with the label."},
        {"role": "user", "content": f"Facts: fact1: the cat {i} is red.\nHypothesis: the cat {i} is red."},
        {"role": "assistant", "content": "fact1 -> hypothesis;\n__PROVED__"}]}
    for i in range(4)
]
# Small and fast on two CPU cores: 2 examples per step, rank-4 adapters, high learning rate.
QUICK = TrainConfig(method="lora", learning_rate=3e-3, max_steps=8, batch_size=2, micro_batch_size=2,
                    cutoff_len=128, lora_r=4, lora_alpha=8, scheduler="constant", warmup_ratio=0.0)


@pytest.fixture(scope="module")
def tokenizer(model_cache):
    from finelogic.models.embedded import load_default

    torch.set_num_threads(1)
    return load_default()[0]


def test_loss_covers_the_assistant_turn_and_its_end_token_only(tokenizer):
    encoded = encode_example(tokenizer, EXAMPLES[0], cutoff_len=512)
    prompt = chat_token_ids(tokenizer, EXAMPLES[0]["messages"][:-1])
    assert encoded.labels[:len(prompt)] == [IGNORE_INDEX] * len(prompt)
    target = encoded.labels[len(prompt):]
    assert tokenizer.decode(target) == "fact1 -> hypothesis;\n__PROVED__<|im_end|>"
    assert encoded.input_ids[len(prompt):] == target


def test_cutoff_cuts_from_the_right_and_an_empty_target_is_an_error(tokenizer):
    encoded = encode_example(tokenizer, EXAMPLES[0], cutoff_len=10)
    assert len(encoded.input_ids) == len(encoded.labels) == 10
    with pytest.raises(ValueError, match=r"cutoff_len=10 leaves no target tokens in \['ex0'"):
        train(EXAMPLES[:1], name="SFT-cut", config=TrainConfig(cutoff_len=10), progress=False)


def test_an_example_without_an_assistant_turn_is_named(tokenizer):
    bad = {"id": "broken-7", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ValueError, match="broken-7"):
        encode_example(tokenizer, bad, cutoff_len=64)


def test_fingerprint_changes_with_data_config_and_base():
    base = parse_model("embedded")
    one = fingerprint(base, EXAMPLES, QUICK)
    assert one == fingerprint(base, [dict(e) for e in EXAMPLES], QUICK)
    assert one != fingerprint(base, EXAMPLES[:3], QUICK)
    assert one != fingerprint(base, EXAMPLES, with_overrides(QUICK, {"learning_rate": 1e-4}))
    assert one != fingerprint(parse_model("hf:/somewhere/else"), EXAMPLES, QUICK)


def test_unknown_config_fields_and_bad_methods_are_rejected():
    with pytest.raises(ValueError, match="unknown TrainConfig fields"):
        with_overrides(QUICK, {"learning_rte": 1})
    with pytest.raises(ValueError, match="'lora' or 'full'"):
        TrainConfig(method="qlora")


def test_lora_training_lowers_the_loss_saves_a_loadable_model_and_is_reused(tmp_path, model_cache):
    trained = train(EXAMPLES, name="SFT-test", config=QUICK, output_root=tmp_path, progress=False)
    first, last = trained.loss_drop(window=2)
    assert last < 0.5 * first, trained.losses  # eight steps on four near-identical examples
    assert trained.examples == 4 and len(trained.losses) == 8 and not trained.cached
    assert trained.tokens > trained.target_tokens > 0
    assert (trained.path / "config.json").is_file() and (trained.path / "train.jsonl").is_file()
    log = json.loads((trained.path / "train_log.json").read_text())
    assert log["config"]["lora_r"] == 4 and log["losses"] == list(trained.losses)
    assert [p.name for p in tmp_path.iterdir()] == [trained.path.name]  # no staging left behind

    from finelogic.models.hf import HFBackend

    backend = HFBackend(str(trained.path))  # an ordinary transformers checkpoint: merged, no peft needed
    assert not any("lora" in name for name, _ in backend.model.named_parameters())
    from finelogic.models.base import GenerationConfig

    reply = backend.generate([EXAMPLES[0]["messages"][:-1]], GenerationConfig(max_new_tokens=12))[0]
    assert "PROVED" in reply  # it learned the one answer it was shown

    again = train(EXAMPLES, name="SFT-test", config=QUICK, output_root=tmp_path, progress=False)
    assert again.cached and again.path == trained.path and again.losses == trained.losses


def test_bf16_autocast_trains_float32_weights_and_is_keyed_only_when_set(tmp_path, model_cache):
    with pytest.raises(ValueError, match="autocast must be 'off' or 'bfloat16'"):
        TrainConfig(autocast="fp8")
    with pytest.raises(ValueError, match="needs float32 weights"):
        TrainConfig(autocast="bfloat16", dtype="bfloat16")
    base = parse_model("embedded")
    fast = with_overrides(QUICK, {"autocast": "bfloat16"})
    # A setting added after checkpoints were made: at its default it is not in the key or the record,
    # so those checkpoints keep their fingerprints; set, it makes another checkpoint.
    assert fingerprint(base, EXAMPLES, with_overrides(fast, {"autocast": "off"})) == fingerprint(base, EXAMPLES, QUICK)
    assert fingerprint(base, EXAMPLES, fast) != fingerprint(base, EXAMPLES, QUICK)
    from finelogic.typed_config import as_data

    assert "autocast" not in as_data(QUICK) and as_data(fast)["autocast"] == "bfloat16"  # a run's provenance
    trained = train(EXAMPLES, name="SFT-test", config=fast, output_root=tmp_path, progress=False)
    first, last = trained.loss_drop(window=2)
    assert last < 0.5 * first, trained.losses
    assert json.loads((trained.path / "train_log.json").read_text())["config"]["autocast"] == "bfloat16"
    saved = json.loads((trained.path / "config.json").read_text())
    assert saved.get("torch_dtype", saved.get("dtype")) == "float32"  # the weights stay float32
    plain = train(EXAMPLES, name="SFT-test", config=QUICK, output_root=tmp_path, progress=False)
    assert "autocast" not in json.loads((plain.path / "train_log.json").read_text())["config"]
    # Same data, seed and steps: the two runs learn alike (bf16 products round to ~3 significant digits).
    assert trained.losses[0] == pytest.approx(plain.losses[0], rel=0.02)
    assert trained.losses[-1] == pytest.approx(plain.losses[-1], rel=0.5, abs=0.05)


def test_a_crash_while_saving_leaves_no_checkpoint(tmp_path, model_cache, monkeypatch):
    def explode(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("transformers.PreTrainedModel.save_pretrained", explode)
    with pytest.raises(OSError, match="disk full"):  # one real optimizer step, then the save fails
        train(EXAMPLES, name="SFT-crash", config=with_overrides(QUICK, {"max_steps": 1}), output_root=tmp_path,
              progress=False)
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_training_resumes_from_its_last_state_and_ends_as_an_uninterrupted_one(tmp_path, model_cache,
                                                                                           monkeypatch):
    config = with_overrides(QUICK, {"max_steps": 4})
    whole = train(EXAMPLES, name="SFT-whole", config=config, output_root=tmp_path / "whole", progress=False)

    step = torch.optim.AdamW.step
    taken = []

    def interrupted(self, *args, **kwargs):  # Ctrl-C during the fourth optimizer step
        taken.append(1)
        if len(taken) == 4:
            raise KeyboardInterrupt
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(EXAMPLES, name="SFT-whole", config=config, output_root=tmp_path / "cut", progress=False, save_every=2)
    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    left = list((tmp_path / "cut").iterdir())
    assert [p.name for p in left] == [whole.path.name + ".resume"]  # no model, only the state after step 2

    resumed = train(EXAMPLES, name="SFT-whole", config=config, output_root=tmp_path / "cut", progress=False,
                    save_every=2)
    assert resumed.losses == whole.losses  # steps 3 and 4 computed again from the state of step 2, exactly
    assert resumed.tokens == whole.tokens and resumed.target_tokens == whole.target_tokens
    from safetensors.torch import load_file

    first, second = (load_file(m.path / "model.safetensors") for m in (whole, resumed))
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert [p.name for p in (tmp_path / "cut").iterdir()] == [whole.path.name]  # the state is gone


def test_a_damaged_resume_state_is_named_not_silently_ignored(tmp_path, model_cache):
    config = with_overrides(QUICK, {"max_steps": 2})
    key = fingerprint(parse_model("embedded"), EXAMPLES, config)
    state = tmp_path / f"{safe_name(parse_model('embedded').name + '-SFT-bad')}-{key}.resume" / "state.pt"
    state.parent.mkdir()
    state.write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(ValueError, match="state.pt cannot be read"):
        train(EXAMPLES, name="SFT-bad", config=config, output_root=tmp_path, progress=False)


def test_a_pass_takes_every_example_once_and_length_grouped_steps_pad_less():
    import random
    from dataclasses import dataclass as dc

    from finelogic.sft.train import step_order

    @dc
    class Enc:
        input_ids: list

    lengths = [random.Random(i).randint(50, 400) for i in range(64)]
    encoded = [Enc([0] * n) for n in lengths]

    def padding(config):
        steps = step_order(encoded, config, random.Random(0))
        assert sorted(i for s in steps for i in s) == list(range(64))  # each example once per pass
        assert {len(s) for s in steps} == {config.batch_size}
        return sum(max(lengths[i] for i in s) * len(s) - sum(lengths[i] for i in s) for s in steps)

    plain = padding(TrainConfig(batch_size=4, micro_batch_size=4, group_by_length=False))
    grouped = padding(TrainConfig(batch_size=4, micro_batch_size=4))
    assert grouped < plain / 3


def test_a_checkpoint_cut_while_saving_is_passed_over_and_the_one_before_is_resumed(tmp_path, caplog):
    """The trainer writes trainer_state.json last; a kill while saving leaves it missing, empty or cut, and
    resuming from that folder failed with "Expecting value" (seen in the distributed rehearsal)."""
    import json
    import logging

    from finelogic.sft.trl_train import last_whole_checkpoint

    def checkpoint(step, state):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"weights")
        if state is not None:
            (folder / "trainer_state.json").write_text(state)
        return folder

    checkpoint(1, json.dumps({"global_step": 1}))
    checkpoint(2, json.dumps({"global_step": 2}))
    cut = [checkpoint(3, '{"global_step": 3, "log_hist'), checkpoint(4, ""), checkpoint(10, None)]
    (tmp_path / "checkpoint-7.txt").write_text("not a checkpoint folder")
    with caplog.at_level(logging.WARNING):
        assert last_whole_checkpoint(tmp_path) == str(tmp_path / "checkpoint-2")  # 10 > 4 > 3 > 2 by step
    warned = "\n".join(r.getMessage() for r in caplog.records)
    assert all(str(folder) in warned for folder in cut) and "not saved whole" in warned
    assert all(folder.exists() for folder in cut)  # only reported unless asked to remove

    assert last_whole_checkpoint(tmp_path, remove_partial=True) == str(tmp_path / "checkpoint-2")
    assert not any(folder.exists() for folder in cut) and (tmp_path / "checkpoint-1").exists()
    empty = tmp_path / "none"
    empty.mkdir()
    assert last_whole_checkpoint(empty) is None
