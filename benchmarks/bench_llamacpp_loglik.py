"""LogicMark log-likelihood throughput: the llama.cpp kind against the HF kind on the same items and model.

Both score the same generated LogicMark items (:func:`finelogic.data.generators.logicmark.generate_logicmark`,
scored with :func:`finelogic.eval.logicmark.score`) with the embedded SmolLM2-135M-Instruct: the HF kind
de-quantises its Q4_1 GGUF to float32 (``open_model("embedded")``), the llama.cpp kind runs the same file
as it is (``open_model("gguf:embedded")``). Both are opened bare (``cache=False``: every request is
computed) and loaded before the clock starts. Printed per kind: wall and CPU seconds, items per second,
model calls and tokens fed, accuracy; then the ratio, argmax agreement per item under each normalisation
(target: at least 98% on ``token_mean``), and the log-likelihood differences. ``--f32`` also scores through
llama.cpp on the file de-quantised to float32 (:func:`dequantized_copy` below, the HF kind's
own weights), which takes llama.cpp's quantised arithmetic out of the comparison. ``--gemma`` also times Gemma 3
270M base through llama.cpp on the same items (no HF row: transformers' GGUF path is wrong for it).

One run, in the order llama.cpp then HF, with the load average before each (the machine is shared).

Run: ``.venv/bin/python benchmarks/bench_llamacpp_loglik.py [--items 300] [--threads 2] [--f32] [--gemma]``.

Measured 2026-12-02 06:42-06:45 UTC (commit 0be9f3f), ``--items 300 --threads 1``, on the shared
2-core machine beside other engineers' jobs (load average 3.7 before llama.cpp, 5.1 before HF):

=================================  ========  ========  ==========  ======  ======  ========
kind                               wall s    CPU s     items/s     calls   tokens  accuracy
=================================  ========  ========  ==========  ======  ======  ========
SmolLM2 Q4_1 via llama.cpp         90.8      77.9      3.30        1,500   8,683   29.3%
SmolLM2 Q4_1->float32 via HF       26.4      20.1      11.38       10      10,696  30.3%
=================================  ========  ========  ==========  ======  ======  ========

llama.cpp is **0.29x** HF's speed (wall; 0.26x CPU): on this 135M model HF packs 32 contexts and their
options into one float32 pass (oneDNN), while llama.cpp decodes each context, then each option on its KV
cache (1,500 small decodes). A first run at load average 6.8 / 5.9 gave 77.3 s vs 27.9 s (0.36x).
Argmax agreement: **289/300 items = 96.3%** on ``token_mean`` (96.0% ``char``, 96.3% ``none``), short of the
98% target; token counts identical for 1,200/1,200 continuations; log-likelihood differences per
continuation median 0.113, 95th percentile 0.344, max 0.623 nats (per token mean 0.045, max 0.208). All 11
items that differ are near-ties for HF: its best two options were 0.053 nats/token apart at the median and
0.107 at most (median over all items 0.466); 37 of the 300 items are that close, and 11 of them flipped.
The differences come from llama.cpp rounding activations to 8 bits (Q8_1) in every Q4_1 matrix product,
which a float32 KV cache does not remove (40 items: median difference 0.117 with the default f16 cache,
0.119 with f32). Gemma 3 270M base via llama.cpp (``--gemma``, first run, load average 6.0): 164.0 s wall,
108.8 s CPU, 1.83 items/s, accuracy 25.3% (its 262,144-entry output layer is computed for every scored
position).

Measured again 2026-12-02 13:59-14:51 UTC with ``--f32 --threads 1 --items 300`` (run under ``nice`` beside
the study's base unit, load average 3.0-4.2, so wall times are not comparable with the run above): the Q4_1
rows repeat the run above exactly (289/300 = 96.3%, the same differences); llama.cpp on the **float32** file
against HF: **300/300 items = 100.0%** under every normalisation, token counts identical for 1,200/1,200,
differences per continuation median 0.0020, 95th percentile 0.0064, max 0.0127 nats (per token mean 0.0008,
max 0.0042), accuracy 30.3% on both. So the two kinds agree to float32 rounding on the same weights; the 3.7%
of Q4_1 items that flip are near-ties moved by llama.cpp's 8-bit activations, which the HF kind does not have.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from finelogic.config import cache_dir  # noqa: E402
from finelogic.data.generators.logicmark import Config, generate_logicmark  # noqa: E402
from finelogic.eval.logicmark import NORMALIZATIONS, score  # noqa: E402
from finelogic.models.spec import open_model  # noqa: E402


def dequantized_copy(source: str | os.PathLike, target: str | os.PathLike | None = None) -> Path:
    """A copy of the GGUF file ``source`` with every tensor de-quantised to float32 (the weights the HF kind
    computes with), written once to ``target`` (default ``cache_dir()/models/<stem>-f32.gguf``): llama.cpp on
    it differs from the HF kind by float32 arithmetic alone, not 8-bit activation rounding."""
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize

    source = Path(source)
    target = Path(target) if target is not None else cache_dir() / "models" / f"{source.stem}-f32.gguf"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    reader = GGUFReader(source)
    architecture = reader.fields["general.architecture"].contents()
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}-", delete=False)
    handle.close()
    try:
        writer = GGUFWriter(handle.name, architecture)
        for name, field in reader.fields.items():
            if name.startswith("GGUF.") or name == "general.architecture":  # the writer writes these itself
                continue
            value = 0 if name == "general.file_type" else field.contents()  # 0: LLAMA_FTYPE_ALL_F32
            vtype = GGUFValueType(field.types[0])
            sub_type = GGUFValueType(field.types[-1]) if vtype == GGUFValueType.ARRAY else None
            writer.add_key_value(name, value, vtype, sub_type=sub_type)
        for tensor in reader.tensors:
            weights = dequantize(tensor.data, tensor.tensor_type).astype(np.float32, copy=False)
            writer.add_tensor(tensor.name, np.ascontiguousarray(weights), raw_dtype=GGMLQuantizationType.F32)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(handle.name, target)
    finally:
        Path(handle.name).unlink(missing_ok=True)
    print(f"de-quantised {source.name} ({len(reader.tensors)} tensors) to float32 in {target} in "
          f"{time.perf_counter() - start:.1f} s")
    return target


def timed(name: str, problems, backend) -> tuple:
    load = os.getloadavg()
    wall, cpu = time.perf_counter(), time.process_time()
    records = score(problems, backend, model=name)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = backend.stats
    print(f"{name:<34} {wall:7.1f} s wall {cpu:7.1f} s CPU {len(problems) / wall:6.2f} items/s "
          f"{stats.calls:6d} calls {stats.prompt_tokens:7d} tokens  acc {100 * records['correct'].mean():5.1f}%  "
          f"(load average before {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f})")
    return records, wall, cpu


def compare(label: str, llama_records, hf_records, n_items: int) -> None:
    """Argmax agreement per normalisation, token counts and log-likelihood differences of one llama.cpp run
    against the HF kind's, and HF's margin on the items where the two pick different options."""
    print(f"\n{label} against HF:")
    for norm in NORMALIZATIONS:
        same = int((llama_records[f"pred_{norm}"] == hf_records[f"pred_{norm}"]).sum())
        print(f"argmax agreement ({norm:>10}): {same}/{n_items} items = {100 * same / n_items:.1f}%")
    k = sum(column.startswith("loglik_") for column in hf_records.columns)
    ours = np.concatenate([llama_records[f"loglik_{i}"].to_numpy() for i in range(k)])
    theirs = np.concatenate([hf_records[f"loglik_{i}"].to_numpy() for i in range(k)])
    tokens = np.concatenate([hf_records[f"tokens_{i}"].to_numpy() for i in range(k)])
    same_tokens = np.concatenate([llama_records[f"tokens_{i}"].to_numpy() for i in range(k)]) == tokens
    diff = np.abs(ours - theirs)
    print(f"token counts identical for {int(same_tokens.sum())}/{len(tokens)} continuations")
    print(f"|log-likelihood difference| per continuation: median {np.median(diff):.4f}, "
          f"95th percentile {np.percentile(diff, 95):.4f}, max {diff.max():.4f} nats; "
          f"per token: mean {np.mean(diff / tokens):.4f}, max {np.max(diff / tokens):.4f}")
    # Where the two disagree, how close were HF's best two options? (token_mean scores, nats per token)
    scores = np.stack([hf_records[f"score_token_mean_{i}"].to_numpy() for i in range(k)], axis=1)
    top2 = np.sort(scores, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    differ = (llama_records["pred_token_mean"] != hf_records["pred_token_mean"]).to_numpy()
    if differ.any():
        print(f"items where the argmax differs: HF's margin between its best two options (per token) median "
              f"{np.median(margin[differ]):.4f}, max {margin[differ].max():.4f} nats; over all items median "
              f"{np.median(margin):.4f}; items with a margin below the largest differing one: "
              f"{int((margin <= margin[differ].max()).sum())}/{n_items}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads and llama.cpp threads")
    parser.add_argument("--batch-size", type=int, default=32, help="contexts per HF forward pass")
    parser.add_argument("--gemma", action="store_true", help="also time Gemma 3 270M base through llama.cpp")
    parser.add_argument("--f32", action="store_true",
                        help="also score through llama.cpp on the file de-quantised to float32 (the HF kind's weights)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import torch

    torch.set_num_threads(args.threads)
    problems = generate_logicmark(Config(limit=args.items, seed=args.seed))
    n_requests = sum(len(p.options) for p in problems)
    print(f"{args.items} LogicMark items ({n_requests} requests), seed {args.seed}, {args.threads} threads each, "
          f"{os.cpu_count()} CPUs")
    gguf = open_model({"kind": "gguf", "path": "embedded", "options": {"threads": args.threads}}, cache=False)
    llama_records, llama_wall, llama_cpu = timed("SmolLM2 Q4_1 via llama.cpp", problems, gguf)
    del gguf
    hf = open_model("embedded", cache=False, batch_size=args.batch_size)
    hf_records, hf_wall, hf_cpu = timed("SmolLM2 Q4_1->float32 via HF", problems, hf)
    del hf
    print(f"\nllama.cpp / HF speed: {hf_wall / llama_wall:.2f}x wall, {hf_cpu / llama_cpu:.2f}x CPU "
          "(above 1: llama.cpp faster)")
    compare("Q4_1 via llama.cpp", llama_records, hf_records, len(problems))
    if args.f32:
        from finelogic.models.embedded import gguf_path

        f32 = open_model({"kind": "gguf", "path": str(dequantized_copy(gguf_path())),
                          "options": {"threads": args.threads}}, cache=False)
        f32_records, f32_wall, _ = timed("SmolLM2 Q4_1->float32 via llama.cpp", problems, f32)
        del f32
        print(f"llama.cpp (float32 file) / HF speed: {hf_wall / f32_wall:.2f}x wall")
        compare("Q4_1->float32 via llama.cpp", f32_records, hf_records, len(problems))
    if args.gemma:
        gemma = open_model({"kind": "gguf", "path": "gemma3-270m", "options": {"threads": args.threads}}, cache=False)
        timed("Gemma 3 270M Q4_K_M via llama.cpp", problems, gemma)


if __name__ == "__main__":
    main()
