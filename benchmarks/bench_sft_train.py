"""Training throughput of the SFT loop on this machine: LoRA on every block vs on the top 8 blocks (tiny).

Same 8 shallow Symb-Direct examples, 4 optimizer steps of 2, SmolLM2-135M-Instruct in float32 on the CPU;
checkpoints go to a temporary folder. Prints tokens/s of each and their ratio, and the loss each reached.

Run: .venv/bin/python benchmarks/bench_sft_train.py
"""
from __future__ import annotations

import tempfile

from finelogic.runs import supervision
from finelogic.sft.datasets import training_problems, training_set
from finelogic.sft.train import TrainConfig, train


def main() -> None:
    problems = training_problems(supervision.PROFILES["tiny"].sizes(), 0)
    examples = [e for e in training_set("Symb-Direct", problems, 0, verify=False)
                if e["meta"]["depth"] is not None and e["meta"]["depth"] <= 1][:8]
    base = dict(max_steps=4, batch_size=2, micro_batch_size=2, cutoff_len=512, learning_rate=1e-3, lora_r=16)
    results = {}
    with tempfile.TemporaryDirectory() as root:
        for label, layers in (("LoRA, all 30 blocks", None), ("LoRA, top 8 blocks (tiny)", 8)):
            trained = train(examples, name="bench", config=TrainConfig(**base, lora_layers=layers),
                            output_root=root, progress=False, force=True)
            results[label] = trained
            print(f"{label:28s} {trained.tokens_per_second:7.1f} tokens/s  {trained.seconds:6.1f} s  "
                  f"loss {trained.losses[0]:.2f} -> {trained.losses[-1]:.2f}")
    slow, fast = results.values()
    print(f"speed-up of the tiny setting: {fast.tokens_per_second / slow.tokens_per_second:.2f}x")


if __name__ == "__main__":
    main()
