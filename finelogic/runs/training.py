"""One supervision style trained at a profile's settings through TRL: ``finelogic train`` and the module
``accelerate launch`` starts on every process::

    finelogic train --style NL --profile paper --base llama3 --out runs/nl-llama3             # one process
    accelerate launch --config_file finelogic/sft/configs/accelerate/zero3_4gpu.yaml \\
        -m finelogic.runs.training --style NL --profile paper --base llama3 --out runs/nl-llama3
    accelerate launch --config_file finelogic/sft/configs/accelerate/cpu_2proc_gloo.yaml \\
        -m finelogic.runs.training --style NL --profile smoke --out /tmp/nl                      # CPU rehearsal

The training set is the supervision family's (:func:`finelogic.runs.supervision.style_examples`), the
settings the profile's ``sft.train``, the trainer :func:`finelogic.sft.trl_train.train_with_trl`.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from finelogic.config import cache_dir, safe_name
from finelogic.runs.supervision import PROFILES, style_examples
from finelogic.sft.train import PAPER_CONFIG, with_overrides
from finelogic.sft.trl_train import TrlTrained, base_spec, train_with_trl


def train_style(style: str, *, profile: str = "paper", base: Any = None, out: str | Path | None = None,
                seed: int = 0, max_steps: int | None = None, resume: bool = True, save_steps: int | None = None,
                examples: Sequence[Mapping[str, Any]] | None = None,
                train_overrides: Mapping[str, Any] | None = None,
                overrides: Mapping[str, Any] | None = None) -> TrlTrained:
    """Fine-tune on one style's training set of ``profile`` with TRL, resuming from the last
    ``checkpoint-<step>`` in ``out`` (default ``cache_dir()/sft-trl/<base>-<style>-<profile>``). ``base``:
    ``llama3``, ``qwen`` or a model spec (None: the profile's); ``train_overrides`` change
    :class:`~finelogic.sft.train.TrainConfig` fields (any leaves the released recipe's batch layout for the
    profile's own); ``overrides`` other ``sft`` settings for the training set (its sizes)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}")
    settings = PROFILES[profile]
    if examples is None:  # every process builds or reads the same set (the store serialises the writers)
        settings, examples = style_examples(profile, style, seed, overrides)
    paper_recipe = settings.train == PAPER_CONFIG and not train_overrides
    config = with_overrides(settings.train, {**(train_overrides or {}), "seed": seed,
                                             **({"max_steps": max_steps} if max_steps else {})})
    spec = base_spec(settings.base_model if base is None else base)
    folder = Path(out) if out is not None else cache_dir() / "sft-trl" / safe_name(f"{spec.name}-{style}-{profile}")
    return train_with_trl(examples, style=style, base=spec, config=config, out=folder, paper_recipe=paper_recipe,
                          resume=resume, save_steps=save_steps, profile=profile)


def main(argv: list[str] | None = None) -> int:
    """``accelerate launch -m finelogic.runs.training ...`` with the options of ``finelogic train``."""
    parser = argparse.ArgumentParser(prog="finelogic.runs.training", description=__doc__.splitlines()[0])
    parser.add_argument("--style", required=True)
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--base", default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--save-steps", type=int, default=None)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--train", default=None, help="TrainConfig overrides as JSON, e.g. '{\"dtype\": \"float32\"}'")
    parser.add_argument("--sizes", default=None, help="training-set sizes as JSON, e.g. '{\"fld_n\": 40}'")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    trained = train_style(args.style, profile=args.profile, base=args.base, out=args.out, seed=args.seed,
                          max_steps=args.max_steps, resume=not args.fresh, save_steps=args.save_steps,
                          train_overrides=json.loads(args.train) if args.train else None,
                          overrides=json.loads(args.sizes) if args.sizes else None)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"{trained.name}: {trained.steps} steps, {trained.tokens} tokens in {trained.seconds:.1f} s on "
              f"{trained.processes} process(es), peak {trained.peak_rss_mb:.0f} MB; open it as ckpt:{trained.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
