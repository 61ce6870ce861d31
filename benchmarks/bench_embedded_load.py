"""First load of the embedded model (GGUF de-quantization into a fresh cache) vs a cached load.

Run: .venv/bin/python benchmarks/bench_embedded_load.py
"""
from __future__ import annotations

import os
import tempfile
import time

import torch


def main() -> None:
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    from finelogic.models.embedded import load_default

    with tempfile.TemporaryDirectory() as cache:
        os.environ["FINELOGIC_CACHE"] = cache
        start = time.perf_counter()
        load_default()
        first = time.perf_counter() - start
        start = time.perf_counter()
        load_default()
        cached = time.perf_counter() - start
    print(f"first load (convert GGUF -> float32 cache): {first:6.1f} s")
    print(f"cached load:                                 {cached:6.1f} s")
    print(f"ratio first / cached:                        {first / cached:6.1f}x")


if __name__ == "__main__":
    main()
