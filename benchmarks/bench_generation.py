"""Greedy generation: the package's ``HFBackend.generate`` against transformers' plain ``generate`` and llama.cpp.

The same FLD CoT prompts (the embedded SmolLM2-135M-Instruct, ``--items`` generated FLD problems at depths
0-7, the CoT prompt) are answered three ways, greedy, ``--new-tokens`` at most:

* ``plain``: transformers' ``model.generate`` on left-padded batches of ``--plain-batch`` prompts in input
  order (every row computes until its batch's last row ends), float32;
* ``package``: ``HFBackend().generate`` as a run calls it (its default batch size and dtype);
* ``llama.cpp``: the embedded model's own Q4_1 GGUF through ``LlamaCppBackend``, one request at a time
  (skipped when llama-cpp-python is missing).

Each way runs ``--rounds`` times after one warm-up call; the best wall time counts. Tokens/s is generated
tokens (the end-of-turn token included, as the model emits it) over wall time. The script prints each
way's tokens/s, the ratios, how many completions are identical to plain ``generate``'s (and, where they
differ, the first differing character), the load average before and after, and exits non-zero when fewer
than ``--min-identical`` package completions are identical.

    .venv/bin/python benchmarks/bench_generation.py --items 16 --new-tokens 160 --threads 2
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=160)
    parser.add_argument("--plain-batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-identical", type=int, default=14)
    parser.add_argument("--skip", default="", help="comma-separated ways not to run (plain, package, llama.cpp)")
    args = parser.parse_args(argv)

    import torch

    from finelogic.data.generators.fld import generate_fld
    from finelogic.models.base import GenerationConfig
    from finelogic.models.hf import HFBackend
    from finelogic.prompts import build_conversation

    torch.set_num_threads(args.threads)
    problems = generate_fld(args.items, seed=0, depths=range(8))
    conversations = [build_conversation(p, "CoT") for p in problems]
    config = GenerationConfig(max_new_tokens=args.new_tokens)
    backend = HFBackend()
    tokenizer, model = backend.tokenizer, backend.model
    prompts = [backend._chat_ids(c) for c in conversations]
    skip = set(filter(None, args.skip.split(",")))
    print(f"{len(prompts)} FLD CoT prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens; "
          f"greedy, {args.new_tokens} new tokens at most; {args.threads} threads; "
          f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}")

    eos = tokenizer.eos_token_id

    def plain(items: list[int]) -> tuple[list[str], int]:
        texts, generated = [], 0
        for start in range(0, len(items), args.plain_batch):
            batch = [prompts[i] for i in items[start:start + args.plain_batch]]
            width = max(map(len, batch))
            ids = torch.tensor([[eos] * (width - len(p)) + p for p in batch])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
            with torch.inference_mode():
                out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=args.new_tokens,
                                     do_sample=False, temperature=None, top_p=None, top_k=None,
                                     pad_token_id=eos, eos_token_id=eos)
            for row in out[:, width:].tolist():
                n = row.index(eos) + 1 if eos in row else len(row)
                generated += n
                texts.append(tokenizer.decode(row[:n], skip_special_tokens=True))
        return texts, generated

    def package(items: list[int]) -> tuple[list[str], int]:
        backend.stats.reset()
        texts = [str(c) for c in backend.generate([conversations[i] for i in items], config)]
        return texts, backend.stats.generated_tokens

    ways = {"plain": plain, "package": package}
    if "llama.cpp" not in skip:
        try:
            from finelogic.models.embedded import gguf_path
            from finelogic.models.llama_cpp import LlamaCppBackend

            llama = LlamaCppBackend(gguf_path(), threads=args.threads)

            def llama_cpp(items: list[int]) -> tuple[list[str], int]:
                llama.stats.reset()
                texts = [str(c) for c in llama.generate([conversations[i] for i in items], config)]
                return texts, llama.stats.generated_tokens

            ways["llama.cpp"] = llama_cpp
        except ImportError as error:
            print(f"  llama.cpp skipped: {error}")
    outputs: dict[str, list[str]] = {}
    speed: dict[str, float] = {}
    for name, way in ways.items():
        if name in skip:
            continue
        way([0] if name == "plain" else [0, 1])  # warm-up
        best = float("inf")
        load = os.getloadavg()[0]
        for _ in range(args.rounds):
            start = time.perf_counter()
            texts, generated = way(list(range(len(prompts))))
            best = min(best, time.perf_counter() - start)
        outputs[name], speed[name] = texts, generated / best
        print(f"  {name:10s} {generated:5d} tokens in {best:6.1f} s: {speed[name]:6.1f} tokens/s "
              f"(load average {load:.1f} before)", flush=True)
    reference = outputs.get("plain")
    for name in speed:
        if name != "plain" and "plain" in speed:
            print(f"  {name} / plain generate: {speed[name] / speed['plain']:.2f}x")
    if "llama.cpp" in speed and "package" in speed:
        print(f"  package / llama.cpp: {speed['package'] / speed['llama.cpp']:.2f}x")
    identical = None
    for name, texts in outputs.items():
        if name == "plain" or reference is None:
            continue
        same = [a == b for a, b in zip(texts, reference)]
        print(f"  {name}: identical to plain generate on {sum(same)}/{len(same)}")
        for i, (a, b) in enumerate(zip(texts, reference)):
            if a != b:
                at = _first_difference(a, b)
                print(f"    item {i}: differs at character {at} of {len(b)}: {b[max(0, at - 30):at + 20]!r} vs "
                      f"{a[max(0, at - 30):at + 20]!r}")
        if name == "package":
            identical = sum(same)
    print(f"  load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0 if identical is None or identical >= args.min_identical else 1


if __name__ == "__main__":
    sys.exit(main())
