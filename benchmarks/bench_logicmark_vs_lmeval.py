"""finelogic's LogicMark scorer against EleutherAI's lm-evaluation-harness: same model, same items.

Both score the first ``--items`` LogicMark items that ``finelogic eval --profile tiny`` scores: finelogic
through its own scorer, lm-eval through the package's task folder (``finelogic tasks --lm-eval``, task
``finelogic_logicmark`` with ``--limit``), with the embedded SmolLM2-135M-Instruct (the float32 directory
``load_default()`` writes, which lm-eval's ``hf`` model loads as a plain transformers checkpoint). Printed:
item-by-item agreement of ``acc`` (argmax of the log-likelihood sums; our ``none``) and ``acc_norm`` (argmax
of sum / characters; our ``char``), the largest per-option log-likelihood difference, every disagreement with
its cause (a tie, or a different tokenisation at the context/continuation boundary), and the wall time of
each scorer, interleaved on one run (finelogic, lm-eval, finelogic again: our time is the mean of the two
runs that bracket lm-eval's; model loading excluded on both sides), with the load average before each.

lm-eval comes with the project's ``lm-eval`` extra (``make venv`` installs it); ``--lmeval-python`` runs its
half with another interpreter. Run: ``.venv/bin/python benchmarks/bench_logicmark_vs_lmeval.py [--items 100]
[--threads 1]`` (exit 0 with a message when that interpreter has no lm-eval). The lm-eval half runs in a
subprocess (this same file, ``--lmeval-side``). Results: ``benchmarks/README.md``; earlier runs, with
lm-eval in a separate environment and the items exported as a JSON task:

With the linear layers on oneDNN (``HFBackend(cpu_linears="auto")``, commit 3abf89a), 2026-12-01 23:33-23:44 UTC,
``--items 1000 --batch-size 32 --threads 1``, run beside a CI run (load average 2.0 / 2.0 / 2.2 before
finelogic / lm-eval / finelogic on 2 CPUs): identical predictions 1000/1000 on acc and acc_norm (31.9% and
28.2% both sides), max per-option difference 6.7e-05 nats (oneDNN's sums run in another order than MKL's,
which lm-eval's side uses), identical token counts; finelogic 103.6 s and 93.7 s wall (mean 98.6 s; 32 forward
calls, 35,280 tokens fed), lm-eval 459.1 s: **4.65x wall**; CPU time 97.1 s vs 403.3 s: **4.15x**.

With each context packed with all its options in one row (commit f60f468), 2026-12-01 15:00-15:21 UTC,
``--items 1000 --batch-size 32 --threads 1``, run at nice 10 beside a CI run and a llama.cpp rehearsal (load
average 2.0 / 3.8 / 2.4 before finelogic / lm-eval / finelogic): identical predictions 1000/1000 on acc and
acc_norm (31.9% and 28.2% both sides), max per-option difference 2.9e-05 nats, identical token counts;
finelogic 356.6 s and 149.6 s wall (mean 253.1 s; 32 forward calls, 35,280 tokens fed), lm-eval 973.4 s:
**3.85x wall**; CPU time 146.3 s vs 528.0 s: **3.61x**.

With cross-item batching (commit 039670c), 2026-12-01 10:51-11:01 UTC on the shared 2-core machine, load
average 12.1 / 10.5 / 8.7 before finelogic / lm-eval / finelogic:
``--items 100 --batch-size 32 --threads 1``: identical predictions 100/100 on acc and acc_norm, max
per-option difference 2.5e-05 nats, identical token counts; finelogic 152.1 s and 51.0 s wall (mean 101.5 s,
17 forward calls, 3,488 tokens fed), lm-eval 285.5 s: 2.81x wall (5.6x against the second run alone);
CPU time 15.8 s vs 62.1 s: 3.94x. The 1,000-item run was started but could not finish on the loaded
machine before the deadline (load average 15-18); rerun it idle.

Before cross-item batching (up to commit 4120394), measured on the shared 2-core CPU machine (lm-eval
0.4.13, 1 thread each, load average 3.7-6): every item
agreed on acc and acc_norm (max per-option difference 2.8e-5 nats, float32 batching noise; identical
token counts). Scoring time lm-eval / finelogic: 100 items 1.6x wall, 2.0x CPU; 30 items 2.8x wall, 2.9x
CPU. finelogic feeds roughly 4x fewer tokens (35 per item here: each context once) but runs two small
passes per item (context, then the options on a copy of its KV cache), so per-call overhead eats part of
the saving. Since then ``loglikelihood`` encodes ``batch_size`` contexts per pass, each packed in one row
with all its options under a prefix-tree mask (one pass per batch, no KV cache copied).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TASK = "finelogic_logicmark"
PROFILE = "tiny"
TIE = 1e-6  # log-likelihood scores closer than this are a tie for the argmax (float32 noise is ~1e-6)


# ------------------------------------------------------------------------------ the lm-eval half


def lmeval_side(model_dir: Path, out: Path, items: int, seed: int, batch_size: int, threads: int) -> None:
    """Run lm-eval's ``hf`` model on the package's LogicMark task; write per-item log-likelihoods and timings."""
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from finelogic.lm_eval_tasks import TASKS_DIR

    torch.set_num_threads(threads)
    started = time.perf_counter()
    lm = HFLM(pretrained=str(model_dir), device="cpu", dtype="float32", batch_size=batch_size)
    load_seconds = time.perf_counter() - started
    started, cpu_started = time.perf_counter(), time.process_time()
    results = simple_evaluate(model=lm, tasks=[TASK], num_fewshot=0, log_samples=True, limit=items,
                              task_manager=TaskManager(include_path=str(TASKS_DIR)),
                              metadata={"profile": PROFILE, "seed": seed}, random_seed=0,
                              numpy_random_seed=0, torch_random_seed=0, fewshot_random_seed=0)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    samples = []
    for sample in sorted(results["samples"][TASK], key=lambda s: s["doc_id"]):
        doc = sample["doc"]
        tokens = [len(lm._encode_pair(doc["context"], " " + option)[1]) for option in doc["choices"]]
        samples.append({"id": doc["id"], "lls": [float(r[0]) for r in sample["filtered_resps"]],
                        "tokens": tokens, "acc": float(sample["acc"]), "acc_norm": float(sample["acc_norm"])})
    out.write_text(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "load_seconds": load_seconds,
                               "metrics": results["results"][TASK], "samples": samples}))


# ---------------------------------------------------------------------------------- our half


def has_lmeval(python: Path) -> bool:
    return python.exists() and subprocess.run([str(python), "-c", "import lm_eval"], capture_output=True).returncode == 0


def their_prediction(ours: dict, theirs: dict, normalization: str) -> int:
    """lm-eval's choice: argmax of the sums (acc) or of sum / characters (acc_norm); ties to the first."""
    scores = [ll / (len(ours[f"option_{k}"]) if normalization == "char" else 1) for k, ll in enumerate(theirs["lls"])]
    return max(range(len(scores)), key=lambda k: (scores[k], -k))


def explain(ours: dict, theirs: dict, normalization: str) -> str:
    """Why one item's prediction differs: a tie in either scorer, or a different token split."""
    options = [ours[f"option_{k}"] for k in range(len(theirs["lls"]))]
    our_scores = [ours[f"score_{normalization}_{k}"] for k in range(len(options))]
    their_scores = [ll / (len(o) if normalization == "char" else 1) for ll, o in zip(theirs["lls"], options)]
    our_tokens = [ours[f"tokens_{k}"] for k in range(len(options))]
    reasons = []
    for name, scores in (("ours", our_scores), ("lm-eval", their_scores)):
        top = sorted(scores, reverse=True)
        if top[0] - top[1] < TIE:
            reasons.append(f"tie in {name} (best two {top[0]:.7f}, {top[1]:.7f}; the first wins)")
    if our_tokens != theirs["tokens"]:
        reasons.append(f"tokenisation differs at the boundary: ours {our_tokens} tokens, lm-eval {theirs['tokens']}")
    return "; ".join(reasons) or f"unexplained: ours {our_scores}, lm-eval {their_scores}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100, help="the first N items of the tiny profile's LogicMark set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per forward pass, both sides")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads, both sides (1: on a busy machine more threads wait on each other)")
    parser.add_argument("--lmeval-python", type=Path, default=Path(sys.executable))
    parser.add_argument("--lmeval-side", nargs=2, metavar=("MODEL_DIR", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    if args.lmeval_side:
        lmeval_side(*map(Path, args.lmeval_side), items=args.items, seed=args.seed, batch_size=args.batch_size,
                    threads=args.threads)
        return 0
    if not has_lmeval(args.lmeval_python):
        print(f"SKIP: lm-eval is not installed for {args.lmeval_python}: install the lm-eval extra "
              "(pip install -e '.[lm-eval]'), or pass --lmeval-python.")
        return 0

    import pandas as pd
    import torch

    from finelogic.eval.logicmark import score
    from finelogic.models.embedded import default_cache_path, load_default
    from finelogic.models.spec import open_model
    from finelogic.runs.logicmark import PROFILES, logicmark_items

    torch.set_num_threads(args.threads)
    problems = logicmark_items(PROFILES[PROFILE].items, args.seed)[:args.items]
    load_default()  # writes the float32 directory lm-eval loads, if it is not there yet
    model_dir = default_cache_path()
    work = Path(tempfile.mkdtemp(prefix="bench-logicmark-"))

    # Uncached: the point is the time of the scoring itself.
    backend = open_model({"kind": "hf", "path": str(model_dir)}, batch_size=args.batch_size, cache=False)
    score(problems[:4], backend, normalization="none")  # warm-up (lm-eval's side warms up while loading)
    backend.stats.reset()
    loads, our_runs = [], []

    def run_ours() -> pd.DataFrame:
        loads.append(f"finelogic {os.getloadavg()[0]:.1f}")
        started, cpu_started = time.perf_counter(), time.process_time()
        frame = score(problems, backend, normalization="none")
        our_runs.append((time.perf_counter() - started, time.process_time() - cpu_started))
        return frame

    ours = run_ours()
    out = work / "lmeval.json"
    loads.append(f"lm-eval {os.getloadavg()[0]:.1f}")
    subprocess.run([str(args.lmeval_python), __file__, "--lmeval-side", str(model_dir), str(out), "--items",
                    str(args.items), "--seed", str(args.seed), "--batch-size", str(args.batch_size), "--threads",
                    str(args.threads)], check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    theirs = json.loads(out.read_text())
    again = run_ours()
    assert again.filter(like="loglik_").equals(ours.filter(like="loglik_")), "our two runs differ"
    our_seconds = sum(wall for wall, _ in our_runs) / len(our_runs)
    our_cpu = sum(cpu for _, cpu in our_runs) / len(our_runs)

    by_id = {s["id"]: s for s in theirs["samples"]}
    rows = ours.set_index("id")
    n = len(problems)
    lines = [f"{n} LogicMark items (seed {args.seed}), model {model_dir.name}, batch size {args.batch_size}, "
             f"{args.threads} torch threads"]
    deltas = [abs(a - b) for pid, s in by_id.items()
              for a, b in zip([rows.loc[pid, f"loglik_{k}"] for k in range(len(s["lls"]))], s["lls"])]
    lines.append(f"max |log-likelihood difference| per option: {max(deltas):.2e} nats")
    for metric, normalization in (("acc", "none"), ("acc_norm", "char")):
        same_pred = sum(rows.loc[pid, f"pred_{normalization}"] == their_prediction(rows.loc[pid], s, normalization)
                        for pid, s in by_id.items())
        same_correct = sum(rows.loc[pid, f"correct_{normalization}"] == bool(s[metric]) for pid, s in by_id.items())
        lines.append(f"{metric:8s} (ours: {normalization:4s}): same prediction {same_pred}/{n}, same correctness "
                     f"{same_correct}/{n}; accuracy ours {100 * rows[f'correct_{normalization}'].mean():.1f}%, "
                     f"lm-eval {100 * theirs['metrics'][f'{metric},none']:.1f}%")
        for pid, s in by_id.items():
            if rows.loc[pid, f"pred_{normalization}"] != their_prediction(rows.loc[pid], s, normalization):
                lines.append(f"  disagreement {pid}: {explain(rows.loc[pid], s, normalization)}")
    token_mismatch = sum(s["tokens"] != [rows.loc[pid, f"tokens_{k}"] for k in range(len(s["tokens"]))]
                         for pid, s in by_id.items())
    lines.append(f"items whose continuation token counts differ: {token_mismatch}/{n}")
    lines.append(f"wall time, scoring only: finelogic {our_seconds:.1f} s (runs: "
                 f"{', '.join(f'{wall:.1f}' for wall, _ in our_runs)}), lm-eval {theirs['seconds']:.1f} s "
                 f"(ratio lm-eval / finelogic = {theirs['seconds'] / our_seconds:.2f}x); "
                 f"model load: lm-eval {theirs['load_seconds']:.1f} s")
    lines.append(f"CPU time, scoring only: finelogic {our_cpu:.1f} s, lm-eval {theirs['cpu_seconds']:.1f} s "
                 f"(ratio {theirs['cpu_seconds'] / our_cpu:.2f}x; steadier than wall time on a shared machine)")
    lines.append(f"load average (1 min) before each run: {', '.join(loads)}; at the end "
                 f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    lines.append(f"forward calls (finelogic, per run): {backend.stats.calls // 2}, "
                 f"tokens fed {backend.stats.prompt_tokens // 2}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
