"""The package's training loop against TRL's SFTTrainer on this CPU (issue 32): tokens/s and peak memory.

Same examples (a profile's training set of one style), same optimizer steps, batch, cutoff and LoRA
settings, SmolLM2-135M-Instruct (the embedded model) in float32, one process each. Each trainer runs in a
child process of its own, so peak resident memory (``ru_maxrss``) is that trainer's (model load included);
tokens/s is tokens processed (no padding) over the training time (model load and tokenisation excluded).
Prints one JSON line per trainer, then the ratio, and the load average before and after.

Run: .venv/bin/python benchmarks/bench_trl_vs_loop.py [--profile tiny] [--style NL] [--steps 8]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child(which: str, profile: str, style: str, steps: int, out: str) -> None:
    from finelogic.runs.supervision import style_examples

    settings, examples = style_examples(profile, style, 0)
    config = replace(settings.train, seed=0, max_steps=steps)
    if which == "loop":
        from finelogic.sft.train import train

        trained = train(examples, name=f"SFT-{style}", base_model="embedded", config=config, output_root=out,
                        progress=False, force=True)
        tokens, targets, seconds, losses = trained.tokens, trained.target_tokens, trained.seconds, trained.losses
    else:
        from finelogic.runs.training import train_style

        trained = train_style(style, profile=profile, base="embedded", out=out, examples=examples, resume=False,
                              max_steps=steps)
        tokens, targets, seconds, losses = trained.tokens, trained.target_tokens, trained.seconds, trained.losses
    print(json.dumps({"trainer": which, "examples": len(examples), "steps": len(losses), "tokens": tokens,
                      "target_tokens": targets, "train_s": round(seconds, 1),
                      "tokens_per_s": round(tokens / seconds, 1),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "loss_first": round(losses[0], 3), "loss_last": round(losses[-1], 3),
                      "torch_threads": __import__("torch").get_num_threads()}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--style", default="NL")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--child", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.profile, args.style, args.steps, args.out)
        return
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, cores: {os.cpu_count()}")
    results = {}
    for which in ("loop", "trl"):
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run([sys.executable, __file__, "--child", which, "--profile", args.profile,
                                   "--style", args.style, "--steps", str(args.steps), "--out", out],
                                  capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
            if done.returncode:
                sys.exit(f"{which} failed:\n{done.stderr[-3000:]}")
            line = done.stdout.strip().splitlines()[-1]
            results[which] = json.loads(line)
            print(line, f"(load {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    ratio = results["trl"]["tokens_per_s"] / results["loop"]["tokens_per_s"]
    print(f"TRL / loop tokens/s: {ratio:.2f}; peak memory TRL / loop: "
          f"{results['trl']['peak_rss_mb'] / results['loop']['peak_rss_mb']:.2f}")


if __name__ == "__main__":
    main()
