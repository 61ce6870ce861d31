"""The rehearsal's distributed-training stage: for every style, ``accelerate launch`` on 2 CPU processes (DDP over
gloo) trains the paper profile's training set from the random-init stand-in for a few steps; the first style is
killed after its first checkpoint and relaunched, to prove the resume. Not rehearsed without GPUs: DeepSpeed
ZeRO-3 sharding, bf16 kernels, FlashAttention-2, NCCL and any throughput.
"""
from __future__ import annotations

import json
import logging
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

log = logging.getLogger(__name__)

STYLES = ("NL", "Symb-Struct", "Symb-Filter", "Symb-Direct", "LogiPT")
CPU_CONFIG = Path(__file__).resolve().parents[1] / "sft" / "configs" / "accelerate" / "cpu_2proc_gloo.yaml"


def rehearse_distributed(root: Path, base: str, *, profile: str = "paper", steps: int = 2,
                         train: Mapping[str, Any], styles: Sequence[str] = STYLES, seed: int = 0,
                         sizes: Mapping[str, Any] | None = None,
                         timeout: float = 3600) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Launch every style (module docstring) in the caller's environment, with training-set ``sizes`` other than
    the profile's: one report row per launch (stage ``trl-2proc <style>``) and the errors by style."""
    from finelogic.rehearsal.running import load_avg, report_row

    rows: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    for index, style in enumerate(styles):
        out = root / "sft-trl" / style
        attempts = [("killed", True), ("", False)] if index == 0 else [("", False)]
        for label, kill in attempts:
            row = report_row("supervision", f"trl-2proc {style}" + (f" {label}" if label else ""))
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
            row.update(wall_s=round(time.perf_counter() - started, 1), status=status,
                       peak_rss_mb=round(record.get("peak_rss_mb") or
                                         resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
                       load_avg=load_avg(), note=_note(record, kill))
            rows.append(row)
            log.info("rehearsal: %s: %s, %.1f s", row["stage"], status, row["wall_s"])
            if status != "ok":
                errors[style] = status
                log.error("rehearsal: %s output:\n%s", row["stage"], output[-3000:])
                break
    return rows, errors


def _kill_after_first_checkpoint(process: subprocess.Popen, out: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    from finelogic.sft.trl_train import saved_whole

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
