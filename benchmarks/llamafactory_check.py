"""Load an export (:mod:`finelogic.sft.export`) with LLaMA-Factory's own loader; run in LLaMA-Factory's
environment, not this project's (its pins conflict), so this script imports nothing from ``finelogic``::

    python3 -m venv /tmp/lf && /tmp/lf/bin/pip install llamafactory torch==2.13.0   # CPU torch
    /tmp/lf/bin/pip uninstall -y torchvision torchaudio   # built for another torch (see _stub_torchaudio)
    /tmp/lf/bin/python benchmarks/llamafactory_check.py DIR DATASET MODEL_DIR

``MODEL_DIR`` is a local model folder whose tokenizer encodes the examples (e.g. a stand-in checkpoint of
the embedded model, ``benchmarks/standin.py``'s ``standin_checkpoints``: SmolLM2's tokenizer has the
ChatML tokens of the ``qwen`` template; under ``llama3`` LLaMA-Factory adds that template's header tokens).

For each exported YAML of ``DATASET`` (``train_<style>_llama3.yaml``, ``train_<style>_qwen.yaml``) it reads
the YAML as written, replaces only what needs a GPU or the hub (``deepspeed`` and ``bf16`` off, a local
model folder for the tokenizer, a temporary ``output_dir``), parses it with LLaMA-Factory's
``get_train_args``, and builds the training set with its ``get_dataset`` (the ``sharegpt`` converter and
the supervised processor with the YAML's template). It prints the number of examples and checks, on
every example, that the labels cover the assistant turn only: the labelled tokens decode to the
assistant's text plus the template's end of turn, and nothing of the prompt is labelled.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import yaml

# Run as a script, its folder leads sys.path, and this package's datasets.py would shadow the datasets library.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _stub_torchaudio() -> None:
    """LLaMA-Factory imports torchaudio at module level (for audio datasets). The torchaudio wheels on PyPI
    are built for other torch versions than the CPU torch 2.13 this machine has (their library fails to
    load), so when it cannot be imported an empty module stands in: text datasets never call it."""
    import peft  # noqa: F401  (transformers and peft look torchaudio up first, and find it absent)
    import transformers  # noqa: F401

    try:
        import torchaudio  # noqa: F401
    except Exception as error:  # noqa: BLE001 (OSError from the native library, ImportError when absent)
        import types

        print(f"note: torchaudio unusable here ({type(error).__name__}); an empty stand-in module is used "
              "(text-only datasets do not call it)")
        sys.modules["torchaudio"] = types.ModuleType("torchaudio")


def check(folder: Path, dataset: str, model: str) -> int:
    _stub_torchaudio()
    from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
    from llamafactory.hparams import get_train_args
    from llamafactory.model import load_tokenizer

    records = json.loads((folder / json.loads((folder / "dataset_info.json").read_text())[dataset]["file_name"])
                         .read_text())
    answers = [r["messages"][-1]["content"] for r in records]
    failures = 0
    for config_path in sorted(folder.glob("train_*.yaml")):
        config = yaml.safe_load(config_path.read_text())
        if config["dataset"] != dataset:
            continue
        with tempfile.TemporaryDirectory() as out:
            config.update(model_name_or_path=model, deepspeed=None, bf16=False, output_dir=out, flash_attn="auto",
                          report_to="none", overwrite_output_dir=True)
            config = {k: v for k, v in config.items() if v is not None}
            model_args, data_args, training_args, finetuning_args, _ = get_train_args(config)
            tokenizer_module = load_tokenizer(model_args)
            tokenizer = tokenizer_module["tokenizer"]
            template = get_template_and_fix_tokenizer(tokenizer, data_args)
            module = get_dataset(template, model_args, data_args, training_args, stage="sft", **tokenizer_module)
            train = module["train_dataset"]
            print(f"{config_path.name}: template {config['template']}, examples: {len(train)}")
            for row, answer in zip(train, answers):
                labelled = [t for t in row["labels"] if t != -100]
                first = next(i for i, t in enumerate(row["labels"]) if t != -100)
                text = tokenizer.decode(labelled)
                # Compared without whitespace: transformers 5 decodes this byte-level tokenizer without spaces.
                squeezed, expected = "".join(text.split()), "".join(answer.split())
                if not squeezed.startswith(expected) or any(t != -100 for t in row["labels"][:first]):
                    failures += 1
                    print(f"  labels do not cover the answer only: {text[:80]!r}")
            sample = train[0]
            start = next(i for i, t in enumerate(sample["labels"]) if t != -100)
            print(f"  first example: {len(sample['input_ids'])} tokens, {start} prompt tokens masked; "
                  f"labelled text ends {tokenizer.decode([t for t in sample['labels'] if t != -100])[-40:]!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(check(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
