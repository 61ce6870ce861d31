"""Each fast path of the package against the best the libraries offer on the same inputs, under load.

One run per condition: ``quiet`` (whatever else runs on the machine), ``busy1`` and ``busy2`` (one or two
``while True: pass`` processes started by this script beside it, on top of whatever else runs). Every part
runs in a child process of its own (2 torch threads, the embedded SmolLM2-135M-Instruct in float32), so its
peak memory is its own; the 1-minute load average is printed before and after each part.

* ``generation``: ``--items`` FLD CoT prompts (depths 0-7), greedy, ``--new-tokens`` at most. The package's
  ``HFBackend.generate`` (shared prompt prefix encoded once, finished rows leave the batch) against
  transformers' plain ``generate`` at batch sizes 8 and 16, ``generate_batch`` (continuous batching) and
  ``generate`` with a static cache (``--compile``: with ``torch.compile``, compile time excluded by a first
  untimed run). Tokens/s (generated tokens, end of turn included, over wall time after a warm-up call) and
  how many texts equal plain ``generate``'s.
* ``loglik``: ``--lm-items`` LogicMark items (4 options each): ``loglikelihood`` packing every context with
  its options in one row against one left-padded pass per (context, option) in lm-eval's order (longest
  first), ``batch_size`` 32 both. Requests/s and the largest score difference.
* ``states``: the probing features (``extract_features``) of ``--probe-problems`` tiny-profile problems:
  the packed path (each text once, its suffixes on its KV cache) against one forward pass per row's text,
  left-padded batches of 8 of similar length, read at the last token. Rows/s and the largest difference.
* ``training``: the package's loop (``sft.train.train``) against TRL's ``SFTTrainer``
  (``sft.trl_train.train_with_trl``) with packing (``bfd``, padding-free rows), both with bf16 autocast, on the same
  study NL examples (the ``--train-examples`` shortest of the study's 1,024, cut at ``--train-cutoff``
  tokens), the study's LoRA (r=32, alpha 64, all 30 blocks, lr 1.5e-3, cosine, 5% warm-up),
  ``--train-steps`` optimizer steps of ``--train-batch`` examples. Tokens/s (tokens trained on over training
  time: model load excluded), peak resident memory, and the loss every 20 steps side by side.

    PYTHONPATH=$PWD nice -n 5 .venv/bin/python benchmarks/bench_speed_paths.py --conditions quiet,busy1,busy2

Prints one table per condition and a JSON line per part (``--json FILE`` collects them).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _peak_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def _backend(**kwargs):
    from finelogic.models.hf import HFBackend

    return HFBackend(**kwargs)


# ----------------------------------------------------------------------------------------------- parts


def part_generation(args) -> dict:
    import torch
    from transformers import GenerationConfig as HFGenerationConfig

    from finelogic.data.generators.fld import generate_fld
    from finelogic.models.base import GenerationConfig
    from finelogic.prompts import build_conversation

    conversations = [build_conversation(p, "CoT") for p in generate_fld(args.items, seed=0, depths=range(8))]
    config = GenerationConfig(max_new_tokens=args.new_tokens)
    backend = _backend()
    tokenizer, model = backend.tokenizer, backend.model
    prompts = [backend._chat_ids(c) for c in conversations]
    eos = tokenizer.eos_token_id
    width_all = max(map(len, prompts))

    def cut(row: list[int]) -> tuple[str, int]:
        n = row.index(eos) + 1 if eos in row else len(row)
        return tokenizer.decode(row[:n], skip_special_tokens=True), n

    def plain(batch_size: int, **extra):
        def run(items: list[int]) -> tuple[list[str], int]:
            texts, generated = [], 0
            for start in range(0, len(items), batch_size):
                batch = [prompts[i] for i in items[start:start + batch_size]]
                width = width_all if extra else max(map(len, batch))  # static: one shape for every batch
                ids = torch.tensor([[eos] * (width - len(p)) + p for p in batch])
                mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
                with torch.inference_mode():
                    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=args.new_tokens,
                                         do_sample=False, temperature=None, top_p=None, top_k=None,
                                         pad_token_id=eos, eos_token_id=eos, **extra)
                for row in out[:, width:].tolist():
                    text, n = cut(row)
                    texts.append(text)
                    generated += n
            return texts, generated
        return run

    def package(items: list[int]) -> tuple[list[str], int]:
        backend.stats.reset()
        texts = [str(c) for c in backend.generate([conversations[i] for i in items], config)]
        return texts, backend.stats.generated_tokens

    def continuous(items: list[int]) -> tuple[list[str], int]:
        generation = HFGenerationConfig(max_new_tokens=args.new_tokens, do_sample=False, eos_token_id=eos,
                                        pad_token_id=eos)
        from transformers import ContinuousBatchingConfig

        paged = ContinuousBatchingConfig(max_memory_percent=0.05)  # the default takes most of the machine's memory
        with torch.inference_mode():
            outputs = model.generate_batch([prompts[i] for i in items], generation_config=generation,
                                           continuous_batching_config=paged)
        by_id = sorted(outputs.values(), key=lambda o: int(str(o.request_id).rsplit("_", 1)[-1]))
        texts, generated = [], 0
        for output in by_id:
            text, n = cut(list(output.generated_tokens))
            texts.append(text)
            generated += n
        return texts, generated

    half, whole = max(1, args.items // 2), args.items
    ways = {"package": package, f"plain b{half}": plain(half), f"plain b{whole}": plain(whole)}
    ways["generate_batch"] = continuous
    ways[f"static cache b{whole}"] = plain(whole, cache_implementation="static")
    if args.compile:
        from transformers import CompileConfig

        compiled = CompileConfig(fullgraph=False, dynamic=False)
        compiled._compile_all_devices = True
        ways[f"static + compile b{whole}"] = plain(whole, cache_implementation="static", compile_config=compiled)
    ways = {name: way for name, way in ways.items() if name.split(" ")[0] not in args.skip.split(",")}
    every = list(range(len(prompts)))
    result = {"part": "generation", "items": len(prompts), "new_tokens": args.new_tokens,
              "prompt_tokens": f"{min(map(len, prompts))}-{max(map(len, prompts))}", "ways": {}}
    texts_of = {}
    for name, way in ways.items():
        before = _load()
        try:
            if "static" in name:  # a full untimed run: compilation, the static cache's allocation
                way(every)
            else:
                way(every[:2])
            start, cpu = time.perf_counter(), time.process_time()
            texts, generated = way(every)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        except Exception as error:  # a way that does not run on this CPU is reported, not fatal
            result["ways"][name] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
            print(f"  generation {name}: failed: {error}", file=sys.stderr, flush=True)
            continue
        texts_of[name] = texts
        result["ways"][name] = {"seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "tokens": generated,
                                "tokens_per_s": round(generated / seconds, 1),
                                "tokens_per_cpu_s": round(generated / cpu, 1), "load_before": before,
                                "load_after": _load()}
        print(f"  generation {name}: {generated / seconds:.1f} tokens/s ({_load()})", file=sys.stderr, flush=True)
    reference = texts_of.get(f"plain b{half}")
    for name, texts in texts_of.items():
        if reference is not None:
            result["ways"][name]["identical_to_plain"] = f"{sum(a == b for a, b in zip(texts, reference))}/{len(texts)}"
    return result


def part_loglik(args) -> dict:
    import numpy as np

    from finelogic.data.generate import generate
    from finelogic.eval.logicmark import requests_for

    problems = generate("logicmark", args.lm_items, seed=0)
    requests = [r for p in problems for r in requests_for(p)]
    from reference_paths import one_pass_per_pair

    fast = _backend(batch_size=32)
    slow = _backend(model=fast.model, tokenizer=fast.tokenizer, batch_size=32)
    result = {"part": "loglik", "items": len(problems), "requests": len(requests), "ways": {}}
    scores = {}
    for name, backend, scorer in (("package (packed)", fast, fast.loglikelihood),
                                  ("one pass per option", slow, lambda chosen: one_pass_per_pair(slow, chosen))):
        scorer(requests[:8])
        before = _load()
        backend.stats.reset()
        start, cpu = time.perf_counter(), time.process_time()
        scored = scorer(requests)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        scores[name] = scored
        result["ways"][name] = {"seconds": round(seconds, 2), "cpu_s": round(cpu, 2),
                                "requests_per_s": round(len(requests) / seconds, 1),
                                "requests_per_cpu_s": round(len(requests) / cpu, 1),
                                "tokens_fed": backend.stats.prompt_tokens, "calls": backend.stats.calls,
                                "load_before": before, "load_after": _load()}
        print(f"  loglik {name}: {seconds:.1f} s ({_load()})", file=sys.stderr, flush=True)
    a, b = (np.array([s[0] for s in scores[n]]) for n in scores)
    result["max_abs_diff"] = float(np.abs(a - b).max())
    result["same_greedy_flags"] = all(x[2] == y[2] for x, y in zip(*scores.values()))
    options = len(problems[0].options)
    result["same_choice"] = int(sum(np.argmax(a[i:i + options]) == np.argmax(b[i:i + options])
                                    for i in range(0, len(a), options)))
    return result


def part_states(args) -> dict:
    import numpy as np
    import torch

    from finelogic.eval.probing import extract_features
    from finelogic.eval.probing_data import TASKS, Readout, build_rows, probing_problems
    from finelogic.runs import probing

    settings = probing.PROFILES["tiny"]
    problems = probing_problems(args.probe_problems, 0, settings.depths, distractors=settings.distractors)
    backend = _backend(batch_size=8)
    readout = Readout("chat", backend.tokenizer)
    rows = [r for task in TASKS for r in build_rows({"test": problems}, task, readout, 0,
                                                     nsd_points=settings.nsd_points)]
    model, pad = backend.model, backend.tokenizer.pad_token_id

    @torch.inference_mode()
    def per_text(rows) -> np.ndarray:
        """One forward pass per row's text, left-padded batches of 8 of similar length, the last layer's state
        (after the final norm) at the last token, L2-normalised: what the packed path returns."""
        ids = [backend._encode(r.text) for r in rows]
        features = [None] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: -len(ids[i]))
        for start in range(0, len(order), 8):
            batch = order[start:start + 8]
            width = max(len(ids[i]) for i in batch)
            input_ids = torch.tensor([[pad] * (width - len(ids[i])) + ids[i] for i in batch])
            mask = torch.tensor([[0] * (width - len(ids[i])) + [1] * len(ids[i]) for i in batch])
            out = model.base_model(input_ids=input_ids, attention_mask=mask,
                                   position_ids=(mask.cumsum(-1) - 1).clamp(min=0), use_cache=False)
            last = out.last_hidden_state[:, -1].float().numpy()
            for row, i in enumerate(batch):
                features[i] = last[row] / np.linalg.norm(last[row])
        return np.stack(features)

    ways = {"package (packed)": lambda rs: extract_features(backend, rs, progress=False),
            "one pass per text": per_text}
    result = {"part": "states", "problems": len(problems), "rows": len(rows), "ways": {}}
    features = {}
    for name, way in ways.items():
        way(rows[:4])
        before = _load()
        start, cpu = time.perf_counter(), time.process_time()
        features[name] = way(rows)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        result["ways"][name] = {"seconds": round(seconds, 2), "cpu_s": round(cpu, 2),
                                "rows_per_s": round(len(rows) / seconds, 2),
                                "rows_per_cpu_s": round(len(rows) / cpu, 2),
                                "load_before": before, "load_after": _load()}
        print(f"  states {name}: {seconds:.1f} s ({_load()})", file=sys.stderr, flush=True)
    a, b = features.values()
    result["max_abs_diff"] = float(np.abs(a - b).max())
    return result


def training_examples(args) -> list[dict]:
    from finelogic.models.embedded import load_default
    from finelogic.runs.supervision import style_examples
    from finelogic.sft.train import encode_example

    _, examples = style_examples("study", "NL", 0)
    tokenizer, _ = load_default()
    lengths = [len(encode_example(tokenizer, e, 10_000).input_ids) for e in examples]
    order = sorted(range(len(examples)), key=lambda i: (lengths[i], i))
    return [examples[i] for i in sorted(order[:args.train_examples])]


def part_training(args, which: str) -> dict:
    from dataclasses import replace

    from finelogic.runs.supervision import PROFILES

    from torch.optim.optimizer import register_optimizer_step_post_hook

    examples = training_examples(args)
    clock: list[tuple[float, float]] = []  # (wall, CPU) seconds at the end of every optimizer step, both trainers
    register_optimizer_step_post_hook(lambda *_: clock.append((time.perf_counter(), time.process_time())))
    config = replace(PROFILES["study"].train, max_steps=args.train_steps, batch_size=args.train_batch,
                     micro_batch_size=args.train_batch, cutoff_len=args.train_cutoff, autocast="bfloat16", seed=0)
    with tempfile.TemporaryDirectory() as out:
        if which == "loop":
            from finelogic.sft.train import train

            trained = train(examples, name="SFT-NL", base_model="embedded", config=config, output_root=out,
                            progress=False, force=True, save_every=0)
        else:
            from finelogic.sft import trl_train

            arguments = trl_train.sft_arguments

            def padding_free(*a, **k):  # TRL's packing (best-fit decreasing): padding-free rows of max_length
                return {**arguments(*a, **k), "packing": True, "packing_strategy": "bfd", "padding_free": True}

            trl_train.sft_arguments = padding_free
            trained = trl_train.train_with_trl(examples, style="NL", base="embedded", config=config, out=out,
                                               resume=False)
    losses = list(trained.losses)
    # Steady state: the steps after the first tenth (the trainers' start-up and first steps left out), tokens
    # counted as the run's mean per step.
    skip = max(1, len(clock) // 10)
    per_step = trained.tokens / len(losses)
    wall, cpu = clock[-1][0] - clock[skip - 1][0], clock[-1][1] - clock[skip - 1][1]
    steady = {"steady_tokens_per_s": round(per_step * (len(clock) - skip) / wall, 1),
              "steady_tokens_per_cpu_s": round(per_step * (len(clock) - skip) / cpu, 1),
              "steady_steps": len(clock) - skip}
    return {**steady, "part": "training", "trainer": which, "examples": len(examples), "steps": len(losses),
            "tokens": trained.tokens, "target_tokens": trained.target_tokens, "train_s": round(trained.seconds, 1),
            "tokens_per_s": round(trained.tokens / trained.seconds, 1), "peak_rss_mb": _peak_mb(),
            "losses_every_20": [round(sum(losses[i:i + 20]) / len(losses[i:i + 20]), 3)
                                for i in range(0, len(losses), 20)]}


# ------------------------------------------------------------------------------------------------ driver


def run_child(part: str, args, extra: list[str]) -> dict:
    command = [sys.executable, __file__, "--child", part, *extra]
    before = _load()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    sys.stderr.write(done.stderr[-1500:] if done.returncode else "")
    if done.returncode:
        return {"part": part, "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(load_before=before, load_after=_load())
    return result


def ratio(ways: dict, fast: str, slow: str, key: str) -> float | None:
    if key not in ways.get(fast, {}) or key not in ways.get(slow, {}):
        return None
    return ways[fast][key] / ways[slow][key]


def report(condition: str, results: list[dict]) -> None:
    print(f"\n== {condition} ==")
    for result in results:
        part = result["part"]
        if "error" in result:
            print(f"  {part}: FAILED: {result['error']}")
            continue
        print(f"  {part} (load {result['load_before']} -> {result['load_after']})")
        if part == "training":
            print(f"    {result['trainer']:5s} {result['tokens_per_s']:7.1f} tokens/s, steady state "
                  f"{result['steady_tokens_per_s']:.1f} tokens/s, {result['steady_tokens_per_cpu_s']:.1f} per CPU "
                  f"second, {result['steps']} steps, "
                  f"{result['tokens']} tokens in {result['train_s']} s, peak {result['peak_rss_mb']} MB")
            print(f"          loss per 20 steps: {result['losses_every_20']}")
            continue
        for name, way in result["ways"].items():
            speed = next((f"{way[k]:8.1f} {k} ({way.get(k.replace('_s', '_cpu_s'), float('nan')):.1f} per CPU second)"
                          for k in ("tokens_per_s", "requests_per_s", "rows_per_s") if k in way), way.get("error", ""))
            same = f", identical to plain's {way['identical_to_plain']}" if "identical_to_plain" in way else ""
            print(f"    {name:22s} {speed}{same}")
        if part == "generation":
            ways = result["ways"]
            baselines = {n: w["tokens_per_s"] for n, w in ways.items() if n != "package" and "tokens_per_s" in w}
            if baselines and "tokens_per_s" in ways.get("package", {}):
                best = max(baselines, key=baselines.get)
                print(f"    package / best other ({best}): {ways['package']['tokens_per_s'] / baselines[best]:.2f}x")
        else:
            key = "requests_per_s" if part == "loglik" else "rows_per_s"
            names = list(result["ways"])
            r = ratio(result["ways"], names[0], names[1], key)
            print(f"    {names[0]} / {names[1]}: {r:.2f}x; max |difference| {result['max_abs_diff']:.2e}"
                  + (f", same choice {result['same_choice']}/{result['items']}" if part == "loglik" else ""))
    trainers = {r["trainer"]: r for r in results if r["part"] == "training" and "error" not in r}
    if len(trainers) == 2:
        loop, trl = trainers["loop"], trainers["trl"]
        print(f"  training: TRL / loop tokens/s {trl['tokens_per_s'] / loop['tokens_per_s']:.2f} (steady state "
              f"{trl['steady_tokens_per_s'] / loop['steady_tokens_per_s']:.2f}, per CPU second "
              f"{trl['steady_tokens_per_cpu_s'] / loop['steady_tokens_per_cpu_s']:.2f}), "
              f"peak memory TRL / loop {trl['peak_rss_mb'] / loop['peak_rss_mb']:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", default="quiet,busy1,busy2")
    parser.add_argument("--parts", default="generation,loglik,states,training")
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=96)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--skip", default="", help="generation ways not to run, by first word (generate_batch, static)")
    parser.add_argument("--lm-items", type=int, default=64)
    parser.add_argument("--probe-problems", type=int, default=4)
    parser.add_argument("--train-steps", type=int, default=200)
    parser.add_argument("--train-batch", type=int, default=1)
    parser.add_argument("--train-examples", type=int, default=64)
    parser.add_argument("--train-cutoff", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child:
        import torch

        torch.set_num_threads(args.threads)
        if args.child.startswith("training:"):
            result = part_training(args, args.child.split(":", 1)[1])
        else:
            result = globals()[f"part_{args.child}"](args)
        result["peak_rss_mb"] = _peak_mb()
        print(json.dumps(result))
        return 0
    extra = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
             if k not in ("conditions", "parts", "json", "child", "compile")] + (["--compile"] if args.compile else [])
    busy_counts = {"quiet": 0, "busy1": 1, "busy2": 2}
    import platform

    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {args.threads} torch threads; "
          f"start {time.strftime('%H:%M:%S')} UTC, load {_load()}", flush=True)
    collected = []
    for condition in args.conditions.split(","):
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(busy_counts[condition])]
        try:
            if spinners:
                time.sleep(5)
            results = []
            for part in args.parts.split(","):
                for child in (["training:loop", "training:trl"] if part == "training" else [part]):
                    result = run_child(child, args, extra)
                    result["condition"] = condition
                    results.append(result)
                    collected.append(result)
                    print(json.dumps(result), flush=True)
            report(f"{condition} ({len(spinners)} busy processes started beside it; "
                   f"{time.strftime('%H:%M:%S')} UTC)", results)
            sys.stdout.flush()
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
    if args.json:
        Path(args.json).write_text(json.dumps(collected, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
