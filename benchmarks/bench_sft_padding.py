"""Share of padding in the tokens a training pass processes, plain shuffle against length-grouped steps
(``TrainConfig.group_by_length``), on the same examples: no model runs, only the tokenizer.

    .venv/bin/python benchmarks/bench_sft_padding.py [--examples 288] [--style NL]
"""
from __future__ import annotations

import argparse
import random
from dataclasses import replace

from transformers import AutoTokenizer

from finelogic.models.embedded import converted_path
from finelogic.runs import supervision
from finelogic.sft.datasets import checked_training_set, training_problems
from finelogic.sft.train import TrainConfig, encode_example, step_order


def padding_share(encoded, config: TrainConfig, passes: int = 3) -> float:
    rng = random.Random(config.seed)
    padded = total = 0
    for _ in range(passes):
        for step in step_order(encoded, config, rng):
            for start in range(0, len(step), config.micro_batch_size):
                lengths = [len(encoded[i].input_ids) for i in step[start:start + config.micro_batch_size]]
                padded += max(lengths) * len(lengths) - sum(lengths)
                total += max(lengths) * len(lengths)
    return padded / total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=288)
    parser.add_argument("--style", default="NL")
    args = parser.parse_args()
    fld = round(args.examples * 0.75)
    sizes = {**supervision.PROFILES["tiny"].sizes(), "fld_n": fld, "fld_unknown": fld // 4, "fld_depths": (0, 1, 2, 3),
             "prontoqa_n": args.examples - fld}
    examples = checked_training_set(args.style, training_problems(sizes, 0), 0).examples
    tokenizer = AutoTokenizer.from_pretrained(converted_path())
    config = TrainConfig(batch_size=4, micro_batch_size=4, cutoff_len=1024)
    encoded = [encode_example(tokenizer, e, config.cutoff_len) for e in examples]
    plain = padding_share(encoded, replace(config, group_by_length=False))
    grouped = padding_share(encoded, config)
    print(f"{len(encoded)} {args.style} examples, micro-batches of {config.micro_batch_size}: padding "
          f"{100 * plain:.1f}% of the tokens processed with a plain shuffle, {100 * grouped:.1f}% length-grouped "
          f"({plain / grouped:.1f}x less)")


if __name__ == "__main__":
    main()
