"""Training throughput of the SFT loop in float32 and with bfloat16 autocast (``TrainConfig.autocast``).

Same 32 NL examples of the study's training set (FLD depths 0-2 and 3-hop ProntoQA), LoRA r=32 on every
block as the study trains, 8 optimizer steps of 4, each run from the same start; float32 and autocast
alternate, ``--rounds`` times. Prints tokens/s of each run, the ratio of the totals, the CPU's bfloat16
instructions, and both runs' losses step by step (they should agree to a few per cent: autocast changes the
rounding of the matrix products, not the maths). Checkpoints go to a temporary folder.

Run: .venv/bin/python benchmarks/bench_sft_autocast.py [--rounds 2] [--threads N]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

from finelogic.runs import supervision
from finelogic.sft.train import train


def bf16_flags() -> str:
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown (no /proc/cpuinfo)"
    found = sorted(f for f in flags if f in ("avx512_bf16", "amx_bf16", "amx_tile"))
    return ", ".join(found) or "none (autocast emulates bfloat16 and is likely slower)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    settings, examples = supervision.style_examples("study", "NL", seed=0)
    examples = examples[:32]
    config = dataclasses.replace(settings.train, max_steps=8, epochs=1)
    print(f"CPU bfloat16 instructions: {bf16_flags()}; load average before: {os.getloadavg()[0]:.2f}")
    totals = {"off": [0, 0.0], "bfloat16": [0, 0.0]}
    losses = {}
    with tempfile.TemporaryDirectory() as root:
        for round_ in range(args.rounds):
            for mode in ("off", "bfloat16"):
                trained = train(examples, name="bench", config=dataclasses.replace(config, autocast=mode),
                                output_root=root, progress=False, force=True)
                totals[mode][0] += trained.tokens
                totals[mode][1] += trained.seconds
                losses[mode] = trained.losses
                print(f"round {round_ + 1} {'float32' if mode == 'off' else 'bf16 autocast':14s} "
                      f"{trained.tokens_per_second:6.1f} tokens/s  {trained.seconds:6.1f} s  "
                      f"loss {trained.losses[0]:.3f} -> {trained.losses[-1]:.3f}")
    rate = {mode: tokens / seconds for mode, (tokens, seconds) in totals.items()}
    print(f"autocast speed-up: {rate['bfloat16'] / rate['off']:.2f}x "
          f"({rate['off']:.1f} -> {rate['bfloat16']:.1f} tokens/s); load average after: {os.getloadavg()[0]:.2f}")
    diffs = [abs(a - b) / a for a, b in zip(losses["off"], losses["bfloat16"])]
    print("losses, float32:      ", " ".join(f"{x:.3f}" for x in losses["off"]))
    print("losses, bf16 autocast:", " ".join(f"{x:.3f}" for x in losses["bfloat16"]))
    print(f"largest relative difference of a step's loss: {max(diffs):.1%}")


if __name__ == "__main__":
    main()
