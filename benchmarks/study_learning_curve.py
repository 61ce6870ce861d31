"""The study's learning curve (issue 29; not a speed benchmark): SFT of the embedded model in one style,
trained on more and more examples, each stage continuing from the last checkpoint on fresh problems, and
evaluated after every stage on fixed held-out items. Run it first on an idle machine; it chooses the `study`
profile's sizes. One JSON line per stage goes to OUT, and each stage's records to OUT.stage<k>.<set>.csv.

    .venv/bin/python benchmarks/study_learning_curve.py OUT.jsonl [--style NL] [--stages 256,256,512,1024]
        [--threads 2] [--learning-rate 1.5e-3] [--autocast off|bfloat16] [--held-out N]

Training (the issue's third try): LoRA r=32 on all blocks, lr 1.5e-3, cosine with 5% warm-up, 4 examples a
step seen once, shallow problems (FLD depths 0-2 with a third UNKNOWN, a quarter 3-hop ProntoQA).
Held-out: 150 FLD items at depths 0-2 (50 per label), 60 at depths 3-5 (beyond the training depths), 60
generated 3-hop ProntoQA items; CoT prompt, greedy, stopping right after an answer marker. Seeds of the
held-out items (7) differ from the training seeds (1, 2, ...). Written before its first full run: stage 0
was started on 2026-12-02 and stopped unfinished (the machine was busy), so no curve exists yet.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import time
from dataclasses import replace

import torch

from finelogic.data.stored import generate_stored
from finelogic.eval.accuracy import evaluate_accuracy
from finelogic.models.base import GenerationConfig
from finelogic.models.spec import open_model
from finelogic.prompts import MARKERS
from finelogic.sft.datasets import SETTING, checked_training_set, training_problems
from finelogic.sft.train import TrainConfig, train

CONFIG = TrainConfig(method="lora", learning_rate=1.5e-3, batch_size=4, micro_batch_size=4, cutoff_len=768,
                     scheduler="cosine", warmup_ratio=0.05, lora_r=32, lora_alpha=64, lora_layers=None, epochs=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--style", default="NL")
    parser.add_argument("--stages", default="256,256,512,1024", help="new examples per stage")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=CONFIG.learning_rate)
    parser.add_argument("--autocast", default="off", choices=("off", "bfloat16"))
    parser.add_argument("--held-out", type=int, default=150, help="FLD items at depths 0-2 (the other sets: 60)")
    args = parser.parse_args()
    config = replace(CONFIG, learning_rate=args.learning_rate, autocast=args.autocast)
    logging.basicConfig(level=logging.INFO)
    torch.set_num_threads(args.threads)
    held_out = {"fld_0-2": generate_stored("fld", n=args.held_out, seed=7, depths=(0, 1, 2)),
                "fld_3-5": generate_stored("fld", n=60, seed=7, depths=(3, 4, 5)),
                "prontoqa_3": generate_stored("prontoqa", n=60, seed=7, hops=(3,))}
    decoding = GenerationConfig(max_new_tokens=192, stop=tuple(MARKERS.values()), keep_stop=True)
    base, seen = "embedded", 0
    for stage, n in enumerate(int(x) for x in args.stages.split(",")):
        fld_n = round(n * 0.75)
        sizes = {"fld_n": fld_n, "fld_unknown": fld_n // 3, "fld_depths": (0, 1, 2), "prontoqa_n": n - fld_n,
                 "prontoqa_hops": 3}
        examples = checked_training_set(args.style, training_problems(sizes, stage + 1), stage + 1).examples
        trained = train(examples, name=f"{args.style}-curve{stage}", base_model=base, config=config)
        seen += len(examples)
        backend = open_model(trained.spec, batch_size=32)
        row = {"stage": stage, "examples_seen": seen, "train_seconds": round(trained.seconds, 1),
               "tokens": trained.tokens, "tokens_per_s": round(trained.tokens_per_second, 1),
               "loss_first": trained.losses[0], "loss_last": trained.losses[-1], "load": os.getloadavg(),
               "learning_rate": config.learning_rate, "autocast": config.autocast}
        for name, items in held_out.items():
            start = time.perf_counter()
            records = evaluate_accuracy(items, backend, SETTING, config=decoding, batch_size=32)
            records.to_csv(f"{args.out}.stage{stage}.{name}.csv", index=False)
            row[name] = {"n": len(records), "accuracy": round(100 * float(records["correct"].mean()), 1),
                         "marker_rate": round(100 * float(records["prediction"].notna().mean()), 1),
                         "seconds": round(time.perf_counter() - start, 1)}
        with open(args.out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
        base = f"ckpt:{trained.path}"


if __name__ == "__main__":
    main()
