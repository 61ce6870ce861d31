"""Paper-scale fine-tuning rehearsed on a CPU: for every style, ``accelerate launch`` on 2 CPU processes (DDP
over gloo) runs ``-m finelogic.runs.training`` as a user launches it, training the profile's training set from a
random-init stand-in (``standin.py``'s :func:`standin_checkpoints`) for a few steps; the first style is killed
(SIGKILL to the launcher and both training processes) after its first checkpoint and launched again, and must
resume from it. Not rehearsed without GPUs: DeepSpeed ZeRO-3 sharding, bf16 kernels, FlashAttention-2, NCCL
and any throughput.

Writes ``trl_distributed.csv`` (one row per launch: stage, status, wall seconds, peak MB, what it did) to
``--out``. Needs the ``[train]`` extra (TRL).

Run: ``.venv/bin/python benchmarks/bench_trl_distributed.py [--profile paper] [--steps 2] [--out DIR]``
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

STYLES = ("NL", "Symb-Struct", "Symb-Filter", "Symb-Direct", "LogiPT")
CPU_CONFIG = REPO / "finelogic" / "sft" / "configs" / "accelerate" / "cpu_2proc_gloo.yaml"
#: Over the paper's recipe (otherwise kept): float32 (bfloat16 matmuls on a CPU are slow), a 1,024-token
#: cutoff (the longest paper-size prompt is ~550 tokens), 4 examples per step instead of 32 (the stand-in's
#: 49,152-entry vocabulary dominates a step's cost).
CPU_TRAIN = {"dtype": "float32", "cutoff_len": 1024, "batch_size": 4, "micro_batch_size": 4}


def launch_styles(root: Path, base: str, *, profile: str = "paper", steps: int = 2,
                  train: Mapping[str, Any] = CPU_TRAIN, styles: Sequence[str] = STYLES, seed: int = 0,
                  sizes: Mapping[str, Any] | None = None, timeout: float = 3600) -> list[dict[str, Any]]:
    """Launch every style (module docstring) into ``root/sft-trl/<style>``, with training-set ``sizes`` other
    than the profile's: one row per launch (stage ``trl-2proc <style>``); the launches stop at the first error."""
    rows: list[dict[str, Any]] = []
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    for index, style in enumerate(styles):
        out = root / "sft-trl" / style
        attempts = [("killed", True), ("", False)] if index == 0 else [("", False)]
        for label, kill in attempts:
            command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CPU_CONFIG),
                       "--main_process_port", str(29531 + index), "-m", "finelogic.runs.training", "--style", style,
                       "--profile", profile, "--base", base, "--out", str(out), "--seed", str(seed),
                       "--max-steps", str(steps), "--save-steps", "1", "--train", json.dumps(dict(train))]
            command += (["--sizes", json.dumps(dict(sizes))] if sizes else []) + (["--fresh"] if kill else [])
            started = time.perf_counter()
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, start_new_session=True)
            status = "ok"
            if kill:
                status = _kill_after_first_checkpoint(process, out, timeout)
                output = process.stdout.read() if process.stdout else ""
            else:
                try:
                    output, _ = process.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    _kill_tree(process)
                    output, _ = process.communicate()
                    status = f"error: timed out after {timeout:.0f} s"
                if process.returncode != 0 and status == "ok":
                    status = f"error: exit {process.returncode}: {output[-400:]}"
            log_file = out / "train_log.json"
            record = json.loads(log_file.read_text(encoding="utf-8")) if not kill and log_file.is_file() else {}
            rows.append({"stage": f"trl-2proc {style}" + (f" {label}" if label else ""), "status": status,
                         "wall_s": round(time.perf_counter() - started, 1),
                         "peak_rss_mb": round(record.get("peak_rss_mb") or
                                              resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
                         "note": _note(record, kill)})
            print(f"{rows[-1]['stage']}: {status}, {rows[-1]['wall_s']} s", file=sys.stderr, flush=True)
            if status != "ok":
                print(output[-3000:], file=sys.stderr)
                return rows
    return rows


def _kill_after_first_checkpoint(process: subprocess.Popen, out: Path, timeout: float) -> str:
    from finelogic.sft.trl_train import saved_whole

    deadline = time.monotonic() + timeout
    first = out / "checkpoint-1"
    while not saved_whole(first):
        if process.poll() is not None:
            return f"error: ended (exit {process.returncode}) before its first checkpoint"
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    _kill_tree(process)
    process.wait()
    return "ok" if saved_whole(first) else f"error: no checkpoint in {timeout:.0f} s"


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the launcher and every process under it (torch's elastic agent starts the training
    processes in sessions of their own, so killing the launcher's group would leave them running)."""
    import psutil

    try:
        children = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for child in children:
        try:
            child.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    try:
        process.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass


def _note(record: Mapping[str, Any], killed: bool) -> str:
    if killed:
        return "SIGKILL after checkpoint-1; relaunched below"
    if not record:
        return ""
    resumed = record.get("resumed_from")
    return (f"{record['processes']} processes (gloo), {record['steps']} steps, {record['examples']} examples, "
            f"{record['tokens']} tokens ({record['target_tokens']} trained on), {record['seconds']:.1f} s training"
            + (f", resumed from {resumed}" if resumed else "")
            + (f"; whole set {record['set_tokens']} tokens, {record['set_at_cutoff']} examples at the cutoff"
               if "set_tokens" in record else ""))


def main(argv: Sequence[str] | None = None) -> int:
    import pandas as pd
    from standin import standin_checkpoints

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps per style (default 2)")
    parser.add_argument("--sizes", default=None, help="training-set sizes as JSON, e.g. '{\"fld_n\": 40}'")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "trl-distributed")
    args = parser.parse_args(argv)
    checkpoint = standin_checkpoints(args.out / "stand-in-models", count=1)[0]
    rows = launch_styles(args.out, f"ckpt:{checkpoint}", profile=args.profile, steps=args.steps,
                         sizes=json.loads(args.sizes) if args.sizes else None)
    table = pd.DataFrame(rows, columns=["stage", "status", "wall_s", "peak_rss_mb", "note"])
    table.to_csv(args.out / "trl_distributed.csv", index=False)
    print(table.to_string(index=False))
    return 0 if len(rows) == len(STYLES) + 1 and (table["status"] == "ok").all() else 1


if __name__ == "__main__":
    sys.exit(main())
