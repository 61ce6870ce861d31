"""float32 linear layers on CPU: ``F.linear`` (MKL's sgemm) against oneDNN with reordered weights, in one run.

For the embedded SmolLM2-135M's layer shapes (576 -> 576, 576 -> 192, 576 -> 1536, 1536 -> 576) at the row
counts the backend feeds (1-16: a decoding step; 256-2,048: a batched pass), then end to end: greedy
generation of a batch of chat prompts with ``HFBackend(cpu_linears="torch")`` and ``"onednn"`` on the same
weights. The ways alternate, ``--rounds`` times; the best time of each is kept and the ratios are taken within
the run. Prints GFLOP/s, the ratios, whether the generations are the same, and the load average.

    .venv/bin/python benchmarks/bench_cpu_linears.py --threads 2

Results are at the end of this docstring.

Measured 2026-12-01 23:30 UTC at commit ed74037 on the project's 2-core AMD EPYC (Zen 4, AVX-512; torch 2.13.0
with MKL 2024.2 and oneDNN 3.12), idle (load 1.2 at the start, the benchmark's own two threads), ``--threads 2``:
GFLOP/s F.linear -> oneDNN, for 576->576 / 576->192 / 576->1536 / 1536->576:
4 rows 38 -> 63 / 36 -> 30 / 41 -> 108 / 37 -> 90; 8 rows 74 -> 84 / 48 -> 31 / 63 -> 115 / 66 -> 109;
16 rows 82 -> 98 / 72 -> 51 / 86 -> 150 / 92 -> 168; 256 rows 130 -> 194 / 154 -> 170 / 123 -> 181 / 138 -> 196;
2,048 rows 174 -> 183 / 163 -> 181 / 152 -> 192 / 145 -> 210; max |difference| 2e-6 to 6e-6 (inputs of unit
scale). One row runs on MKL both ways (``MIN_ROWS``); its ratios there, 0.72-1.22x, show this machine's noise
on sub-millisecond calls. Before ``MIN_ROWS`` one row through oneDNN was 0.30-1.45x of MKL (576->192 worst).
End to end, greedy generation of 16 chat prompts, 48 new tokens, batch 8: F.linear 15.9 s, oneDNN 11.5 s,
**1.38x**, the same text for 16/16 (an earlier run, before ``MIN_ROWS``: 13.4 vs 11.1 s, 1.20x, 16/16).
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def best_time(call, rounds: int, repeats: int) -> float:
    call()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            call()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=16, help="chat prompts generated end to end (0: none)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args(argv)

    import torch

    from finelogic.models import GenerationConfig, HFBackend, onednn

    if not onednn.available():
        print("this torch build has no oneDNN linear ops: nothing to compare")
        return 1
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, load average {os.getloadavg()[0]:.1f}")
    mode = onednn.OneDNNLinears()
    linear = torch.nn.functional.linear
    ratios = []
    with torch.inference_mode():
        for rows in (1, 4, 8, 16, 256, 2048):
            for fan_in, fan_out in ((576, 576), (576, 192), (576, 1536), (1536, 576)):
                x, weight = torch.randn(rows, fan_in), torch.randn(fan_out, fan_in) / fan_in ** 0.5
                repeats = max(3, 20_000_000 // (rows * fan_in * fan_out))
                mkl = best_time(lambda: linear(x, weight), args.rounds, repeats)
                with mode:
                    dnn = best_time(lambda: linear(x, weight), args.rounds, repeats)
                    got = linear(x, weight)
                diff = float((got - linear(x, weight)).abs().max())
                flop = 2 * rows * fan_in * fan_out / 1e9
                if rows >= onednn.MIN_ROWS:  # fewer rows run on MKL both ways: their ratio is noise
                    ratios.append(mkl / dnn)
                print(f"  {rows:5d} x {fan_in:4d} -> {fan_out:4d}: F.linear {flop / mkl:6.1f} GFLOP/s, "
                      f"oneDNN {flop / dnn:6.1f} GFLOP/s, {mkl / dnn:.2f}x, max |difference| {diff:.1e}")
    print(f"  oneDNN against F.linear over these shapes from {onednn.MIN_ROWS} rows: "
          f"{min(ratios):.2f}x-{max(ratios):.2f}x")
    if args.prompts:
        plain = HFBackend(batch_size=8, cpu_linears="torch")
        fast = HFBackend(plain.model, plain.tokenizer, batch_size=8, cpu_linears="onednn")
        prompts = [[{"role": "user", "content": f"Problem {i}: all cats are animals and Tom is a cat. "
                                                 f"Is Tom an animal? Explain step by step." * (1 + i % 3)}]
                   for i in range(args.prompts)]
        config = GenerationConfig(max_new_tokens=args.max_new_tokens)
        fast.generate(prompts[:2], config)  # warm-up, and the weights reordered
        times: dict[str, list[float]] = {"F.linear": [], "oneDNN": []}
        answers = {}
        for _ in range(args.rounds):
            for name, backend in (("F.linear", plain), ("oneDNN", fast)):
                start = time.perf_counter()
                answers[name] = backend.generate(prompts, config)
                times[name].append(time.perf_counter() - start)
        same = sum(a == b for a, b in zip(answers["F.linear"], answers["oneDNN"]))
        print(f"  generate {args.prompts} prompts, {args.max_new_tokens} new tokens, batch 8: F.linear "
              f"{min(times['F.linear']):.1f} s, oneDNN {min(times['oneDNN']):.1f} s: "
              f"{min(times['F.linear']) / min(times['oneDNN']):.2f}x; the same text for {same}/{args.prompts}")
    print(f"  load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
