"""How much the backends' fast paths save, on the embedded SmolLM2-135M-Instruct (CPU, float32).

Parts (each a few seconds to a minute on two CPU cores):
  gen     HF generation tokens/s, batch 1 vs one batch of all prompts
  server  llama-cpp-python server (same GGUF weights) vs HF, same prompts (needs llama_cpp)
  ll      log-likelihood of 4-choice items with long contexts: shared-context KV reuse vs one
          full forward pass per (context, choice)
  hidden  probing read-outs on 15-step proofs: one pass + KV-reused suffixes vs one pass per prefix

Run: .venv/bin/python benchmarks/bench_backends.py [--parts gen,server,ll,hidden] [--threads 2]
"""
from __future__ import annotations

import argparse
import random
import time
from typing import Callable

import numpy as np
import torch

from finelogic.models import GenerationConfig, HFBackend
from reference_paths import one_pass_per_pair, one_pass_per_prefix

WORDS = ["red", "big", "kind", "blue", "quiet", "round", "cold", "green", "young", "rough", "smart", "nice"]
NOUNS = ["cat", "dog", "bear", "mouse", "lion", "rabbit", "squirrel", "tiger", "cow", "eagle"]
GENERATION_PROMPT = "<|im_end|>\n<|im_start|>assistant\n"


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def bench_generation(backend: HFBackend, n: int = 8, new_tokens: int = 32) -> None:
    topics = ["a lighthouse", "the moon", "a lost key", "winter", "a robot", "the sea", "a garden", "a city"]
    conversations = [[{"role": "user", "content": f"Write a long story about {t}."}] for t in topics[:n]]
    config = GenerationConfig(max_new_tokens=new_tokens)
    backend.generate(conversations[:1], GenerationConfig(max_new_tokens=2))  # warm-up
    rates = {}
    for batch in (1, n):
        backend.batch_size = batch
        backend.stats.reset()
        seconds, _ = timed(lambda: backend.generate(conversations, config))
        rates[batch] = backend.stats.generated_tokens / seconds
        print(f"gen     batch {batch}: {backend.stats.generated_tokens} tokens in {seconds:5.1f} s = "
              f"{rates[batch]:6.1f} tokens/s")
    print(f"gen     batched / unbatched: {rates[n] / rates[1]:.1f}x")


def bench_server(backend: HFBackend, n: int = 8, new_tokens: int = 32) -> None:
    try:
        from llama_server import LlamaServer
    except ImportError as error:
        print(f"server  skipped: {error}")
        return
    from finelogic.models import OpenAIBackend

    topics = ["a lighthouse", "the moon", "a lost key", "winter", "a robot", "the sea", "a garden", "a city"]
    conversations = [[{"role": "user", "content": f"Write a long story about {t}."}] for t in topics[:n]]
    config = GenerationConfig(max_new_tokens=new_tokens)
    with LlamaServer(threads=torch.get_num_threads()) as server:
        # repeat_penalty 1.0: llama-cpp-python's default of 1.1 is not greedy decoding.
        remote = OpenAIBackend(server.model, base_url=server.base_url, cache_path=False, max_concurrency=1,
                               extra_body={"repeat_penalty": 1.0})
        remote.generate(conversations[:1], GenerationConfig(max_new_tokens=2))
        remote.stats.reset()
        server_s, server_out = timed(lambda: remote.generate(conversations, config))
    backend.batch_size = n
    hf_s, hf_out = timed(lambda: backend.generate(conversations, config))
    same = sum(a == b for a, b in zip(server_out, hf_out))
    print(f"server  llama.cpp (one request at a time): {server_s:5.1f} s, HF batched: {hf_s:5.1f} s for {n} prompts "
          f"x {new_tokens} tokens; llama.cpp speed / HF speed: {hf_s / server_s:.2f}x; identical greedy texts: {same}/{n}")


def proof_item(rng: random.Random, n_facts: int) -> str:
    facts = " ".join(f"fact{i + 1}: if something is {rng.choice(WORDS)} then it is {rng.choice(WORDS)}."
                     for i in range(n_facts))
    return f"Facts: {facts} The {rng.choice(NOUNS)} is {rng.choice(WORDS)}. Hypothesis: the {rng.choice(NOUNS)} is kind."


def bench_loglikelihood(backend: HFBackend, items: int = 4) -> None:
    rng = random.Random(0)
    requests = []
    for _ in range(items):
        context = proof_item(rng, 12) + " Answer:"
        requests += [(context, choice) for choice in (" proved", " disproved", " unknown", " the hypothesis is false")]
    n_tokens = len(backend.tokenizer(requests[0][0]).input_ids)
    backend.batch_size = 4
    backend.loglikelihood([("warm", " up")])
    shared_s, shared = timed(lambda: backend.loglikelihood(requests))
    full_s, full = timed(lambda: one_pass_per_pair(backend, requests))
    diff = max(abs(a[0] - b[0]) for a, b in zip(shared, full))
    print(f"ll      {items} items x 4 choices, contexts ~{n_tokens} tokens: KV reuse {shared_s:5.1f} s, "
          f"one pass per choice (batch 4) {full_s:5.1f} s: {full_s / shared_s:.1f}x; max |diff| {diff:.1e}")


def proof_text(backend: HFBackend, rng: random.Random, steps: int = 15) -> tuple[str, list[int]]:
    problem = proof_item(rng, 8)
    proof = " ".join(f"fact{rng.randint(1, 8)} & int{i} -> int{i + 1}: the {rng.choice(NOUNS)} is "
                     f"{rng.choice(WORDS)} and {rng.choice(WORDS)}." for i in range(steps))
    head = backend.tokenizer.apply_chat_template([{"role": "user", "content": problem}], tokenize=False,
                                                 add_generation_prompt=True)
    text = head + proof
    ends = [len(head) + i + 1 for i, ch in enumerate(proof) if ch == "."]
    return text, ends


def bench_hidden(backend: HFBackend, proofs: int = 1) -> None:
    rng = random.Random(1)
    texts = [proof_text(backend, rng) for _ in range(proofs)]
    n_tokens = len(backend.tokenizer(texts[0][0]).input_ids)
    backend.hidden_states("warm up", [4])
    for suffix in (None, GENERATION_PROMPT):
        fast_s, fast = timed(lambda: [backend.hidden_states(t, b, suffixes=suffix) for t, b in texts])
        slow_s, slow = timed(lambda: [one_pass_per_prefix(backend, t, b, suffixes=suffix) for t, b in texts])
        diff = max(float(np.abs(a - b).max()) for a, b in zip(fast, slow))
        label = "no suffix        " if suffix is None else "generation prompt"
        print(f"hidden  {proofs} proofs x 15 steps (~{n_tokens} tokens), {label}: one pass {fast_s:5.2f} s, "
              f"per prefix {slow_s:5.2f} s: {slow_s / fast_s:.1f}x; max |diff| {diff:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="gen,server,ll,hidden")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    backend = HFBackend()
    parts = {"gen": bench_generation, "server": bench_server, "ll": bench_loglikelihood, "hidden": bench_hidden}
    for name in args.parts.split(","):
        parts[name](backend)


if __name__ == "__main__":
    main()
