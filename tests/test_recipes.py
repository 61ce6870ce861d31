"""The paper's fine-tuning recipe is written once: the loop's PAPER_CONFIG, the LLaMA-Factory YAML and the
TRL arguments all carry the released file's values."""
from __future__ import annotations

import pytest

from finelogic.runs.supervision import PROFILES
from finelogic.sft import recipes
from finelogic.sft.train import PAPER_CONFIG


def test_every_setting_names_its_source():
    for setting in recipes.PAPER_RECIPE:
        assert setting.source, setting.key
        assert "logical.yaml" in setting.source or "paper" in setting.source


def test_the_released_values():
    assert recipes.value("learning_rate") == 1e-6
    assert recipes.value("num_train_epochs") == 3.0
    assert recipes.value("cutoff_len") == 2500
    assert recipes.value("per_device_train_batch_size") == 8
    assert recipes.value("warmup_ratio") == 0.0
    assert recipes.value("deepspeed").endswith("ds_z3_config.json")
    assert recipes.global_batch() == 32
    with pytest.raises(KeyError, match="known"):
        recipes.value("weight_decay")


def test_paper_config_and_the_paper_profile_come_from_the_recipe():
    assert (PAPER_CONFIG.method, PAPER_CONFIG.learning_rate, PAPER_CONFIG.epochs, PAPER_CONFIG.batch_size,
            PAPER_CONFIG.cutoff_len, PAPER_CONFIG.scheduler, PAPER_CONFIG.warmup_ratio, PAPER_CONFIG.dtype) == (
        "full", 1e-6, 3.0, 32, 2500, "cosine", 0.0, "bfloat16")
    assert PROFILES["paper"].train == PAPER_CONFIG


def test_trl_arguments_keep_the_global_batch_on_fewer_processes():
    four, two = recipes.trl_arguments(gpus=4), recipes.trl_arguments(gpus=2)
    assert four["per_device_train_batch_size"] * four["gradient_accumulation_steps"] * 4 == 32
    assert two["per_device_train_batch_size"] * two["gradient_accumulation_steps"] * 2 == 32
    assert four["max_length"] == 2500 and four["learning_rate"] == 1e-6
    with pytest.raises(ValueError, match="cannot be split"):
        recipes.trl_arguments(gpus=3)


@pytest.mark.parametrize("base,template,hub", [("llama3", "llama3", "meta-llama/Llama-3.1-8B-Instruct"),
                                               ("qwen", "qwen", "Qwen/Qwen2.5-7B-Instruct")])
def test_llamafactory_config_per_base_model(base, template, hub):
    config = recipes.llamafactory_config(base, "finelogic_nl", "saves/nl")
    assert config["template"] == template and config["model_name_or_path"] == hub
    assert config["dataset"] == "finelogic_nl" and config["output_dir"] == "saves/nl"
    for key in ("stage", "finetuning_type", "deepspeed", "cutoff_len", "learning_rate", "num_train_epochs",
                "lr_scheduler_type", "bf16", "per_device_train_batch_size"):
        assert config[key] == recipes.value(key)
    with pytest.raises(ValueError, match="llama3, qwen"):
        recipes.llamafactory_config("mistral", "x", "y")


def test_gpu_hours_from_tokens_and_a_throughput():
    # 3 epochs of 3.6 million tokens at 4,000 tokens/s over 4 GPUs: 2,700 s = 0.75 h wall, 3 GPU-hours.
    assert recipes.gpu_hours(3.6e6, 4000) == pytest.approx(3.0)
    assert recipes.gpu_hours(3.6e6, 4000, gpus=1, epochs=1) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        recipes.gpu_hours(1, 0)
