"""The paper profile rehearsed against stand-in models (``book/rehearsal.md``): what a paper run sends to the
models it reaches over HTTP, how long the package's own work takes and where it breaks, measured on a CPU
before any GPU or API money is spent. None of its numbers are results about any model.

It starts the stand-in server (``standin.py``: an OpenAI-compatible load and code-path simulator that answers
every model name and counts what it is sent) and runs the public command once per family, as a user of
served models runs it::

    finelogic run --profile paper --family FAMILY --force --output-dir ROOT/notebooks -y "models: [...]"

in the environment such a user sets: ``OPENAI_BASE_URL`` (the stand-in: the GPT-4.1-mini judge reaches it so),
the API key variables, and ``FINELOGIC_CACHE`` / ``FINELOGIC_RESULTS`` under ``--root``, apart from real results.
The accuracy models (GPT-4o, DeepSeek-R1, and Llama-3.1-8B-Instruct and Qwen-2.5-7B-Instruct as a vLLM user
serves them) are given as ``openai`` specs at the stand-in, with the profile's names and scorers.

The families rehearsed are those whose models a paper run reaches over HTTP: datasets, accuracy, depth and
soundness. Probing and LogicMark read their models in process (hidden states, log-likelihoods) and supervision
trains and evaluates in process: the public command has no stand-ins for a profile's in-process models, so they
are not rehearsed here (claims reads their runs).

Writes to ``--out`` (default ``book/generated-static/rehearsal/``, which the book page includes):
``report.csv`` / ``report.md`` (per family: status, wall time, peak memory, requests, prompt tokens, token caps,
judge calls, model-cache calls and hits, cache and result bytes, files, load), ``requests.csv`` (per family,
model and prompt kind), ``plan.csv`` / ``plan.md`` (per model: requests, prompt tokens, output tokens at the
cap and, with ``--price``, the cost) and ``provenance.md`` (the command, commit, machine load, sizes).

Run: ``FINELOGIC_DATA_DIR=/path/to/data .venv/bin/python benchmarks/rehearsal.py [--models GPT-4o ...]
[--price gpt-4o=2.5/10 ...]`` (``make rehearse`` runs it with ``REHEARSE_ARGS``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from standin import StandInProcess  # noqa: E402  (beside this script)

#: The families whose models a paper run reaches over HTTP, in the order they read each other.
FAMILIES = ("datasets", "accuracy", "depth", "soundness")
#: The families that take the accuracy models as the ``models`` notebook parameter.
TAKES_MODELS = ("accuracy", "depth")
#: The stand-in answers at once: no real backoff is needed between its deterministic retries.
SERVER_OPTIONS = {"max_concurrency": 8, "backoff_base": 0.01, "backoff_max": 0.05}
REPORT_COLUMNS = ("family", "status", "wall_s", "peak_rss_mb", "requests", "prompt_tokens", "cap_tokens",
                  "judge_calls", "cache_calls", "cache_hits", "cache_bytes", "result_bytes", "files", "load_avg")
REQUEST_COLUMNS = ("family", "model", "kind", "requests", "prompt_tokens", "cap_tokens", "reply_tokens")
PLAN_COLUMNS = ("model", "requests", "prompt_tokens", "output_tokens_at_cap", "input_usd", "output_usd_at_cap",
                "total_usd_at_cap")


def served_models(profile: str, url: str, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``profile``'s accuracy models called ``names`` (None: all) as OpenAI-compatible specs at ``url``, each
    asking for the model a real server serves under the profile's name, its ``scorer`` kept."""
    from finelogic.runs.accuracy import PROFILES

    specs = []
    for entry in PROFILES[profile].models:
        entry = {"kind": "embedded"} if entry == "embedded" else dict(entry)
        model = entry.get("model") or entry.get("path") or entry["kind"]
        spec = {"name": entry.get("name") or model, "kind": "openai", "model": model, "base_url": url,
                "options": dict(SERVER_OPTIONS)}
        if "scorer" in entry:
            spec["scorer"] = entry["scorer"]
        specs.append(spec)
    unknown = sorted(set(names or ()) - {s["name"] for s in specs})
    if unknown:
        raise SystemExit(f"--models: {', '.join(unknown)} not in the {profile} profile's accuracy models "
                         f"({', '.join(s['name'] for s in specs)})")
    return [s for s in specs if names is None or s["name"] in names]


def command(family: str, profile: str, output_dir: Path, parameters: Mapping[str, Any]) -> list[str]:
    """The ``finelogic run`` command line for one family (its notebook parameters as one YAML mapping)."""
    line = ["finelogic", "run", "--profile", profile, "--family", family, "--force", "--output-dir", str(output_dir)]
    return line + (["-y", json.dumps(dict(parameters))] if parameters else [])  # JSON is YAML


def run_family(line: Sequence[str], env: Mapping[str, str]) -> tuple[str, float, float]:
    """Run ``line`` (``finelogic ...``) to its end: (status, wall seconds, peak resident MB of the command and
    the notebook kernel it waited for)."""
    finelogic = Path(sys.executable).with_name("finelogic")
    argv = [str(finelogic)] if finelogic.is_file() else [sys.executable, "-m", "finelogic.book.cli"]
    start = time.perf_counter()
    process = subprocess.Popen(argv + list(line[1:]), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        tail = output.strip().splitlines()[-3:]
        print(output[-4000:], file=sys.stderr)
        return f"error: exit {process.returncode}: {' / '.join(tail)}"[:300], wall, usage.ru_maxrss / 1024
    return "ok", wall, usage.ru_maxrss / 1024


def difference(after: list[dict[str, Any]], before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server's counts since ``before``, per (model, kind) that was sent anything."""
    old = {(c["model"], c["kind"]): c for c in before}
    out = []
    for count in after:
        previous = old.get((count["model"], count["kind"]), {})
        delta = {k: v - previous.get(k, 0) for k, v in count.items() if k not in ("model", "kind")}
        if delta["requests"]:
            out.append({"model": count["model"], "kind": count["kind"], **delta})
    return out


def plan_table(requests: pd.DataFrame, prices: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """Requests and tokens per model, and the API cost at ``prices`` (model -> US$ per million input and output
    tokens; none for an unpriced model), output counted at the cap: the most a run is billed."""
    if requests.empty:
        return pd.DataFrame(columns=list(PLAN_COLUMNS))
    table = requests.groupby("model", sort=True)[["requests", "prompt_tokens", "cap_tokens"]].sum().reset_index()
    table = table.rename(columns={"cap_tokens": "output_tokens_at_cap"})
    prices = dict(prices or {})
    price_in = table["model"].map(lambda m: prices[m][0] if m in prices else float("nan"))
    price_out = table["model"].map(lambda m: prices[m][1] if m in prices else float("nan"))
    table["input_usd"] = table["prompt_tokens"] / 1e6 * price_in
    table["output_usd_at_cap"] = table["output_tokens_at_cap"] / 1e6 * price_out
    table["total_usd_at_cap"] = table["input_usd"] + table["output_usd_at_cap"]
    return table[list(PLAN_COLUMNS)]


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """``"gpt-4o=2.5/10"`` -> ``("gpt-4o", (2.5, 10.0))``: US$ per million input / output tokens."""
    model, sep, value = text.partition("=")
    number_in, slash, number_out = value.partition("/")
    try:
        if not (sep and slash and model.strip()):
            raise ValueError
        return model.strip(), (float(number_in), float(number_out))
    except ValueError:
        raise argparse.ArgumentTypeError(f"price {text!r}: expected MODEL=INPUT/OUTPUT in US$ per million tokens, "
                                         "e.g. gpt-4o=2.5/10") from None


def folder_bytes(folder: Path) -> tuple[int, int]:
    """(bytes, files) under ``folder``, less SQLite's passing write-ahead logs (the store's ``-wal``, ``-shm``)."""
    files = [p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm"))] \
        if folder.exists() else []
    return sum(p.stat().st_size for p in files), len(files)


def handed_on_without_checkpoints(profile: str, folder: Path) -> None:
    """Write a supervision run that trained nothing: the accuracy page evaluates the supervision page's
    checkpoints beside its models, and the rehearsal trains none (the paper's fine-tuning needs GPUs; its
    trainer is rehearsed by ``bench_trl_distributed.py``)."""
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.supervision import FAMILY, SupervisionRun

    note = {"rehearsal": "no fine-tuned models (benchmarks/rehearsal.py)"}
    SupervisionRun(Provenance(FAMILY, profile, 0, settings=note),
                   training=pd.DataFrame(columns=["setting", "checkpoint"])).write(folder)


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def rehearse(profile: str = "paper", families: Sequence[str] = FAMILIES, *, root: Path, out: Path,
             models: Sequence[str] | None = None, settings: Sequence[str] | None = None, keep_cache: bool = False,
             prices: Mapping[str, tuple[float, float]] | None = None, data_dir: str | None = None,
             tokenizer: Path | None = None) -> pd.DataFrame:
    """Run ``families`` of ``profile`` against the stand-in under ``root`` and write the tables to ``out``
    (module docstring); the report."""
    if not keep_cache:
        for sub in ("cache", profile, "notebooks"):
            shutil.rmtree(root / sub, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    rows, request_rows, lines = [], [], []
    started = datetime.datetime.now(datetime.timezone.utc)
    wall = time.perf_counter()
    with StandInProcess(tokenizer) as server:
        env = {**os.environ, "FINELOGIC_CACHE": str(root / "cache"), "FINELOGIC_RESULTS": str(root),
               "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "stand-in", "DEEPSEEK_API_KEY": "stand-in",
               "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
        if data_dir:
            env["FINELOGIC_DATA_DIR"] = str(Path(data_dir).resolve())
        specs = served_models(profile, server.url, models)
        handed_on_without_checkpoints(profile, root / profile / "supervision")
        for family in [f for f in FAMILIES if f in families]:
            parameters: dict[str, Any] = {}
            if family in TAKES_MODELS:
                parameters["models"] = specs
                if settings:
                    parameters["settings"] = list(settings)
            line = command(family, profile, root / "notebooks", parameters)
            lines.append(line)
            before, cache_before = server.counts(), folder_bytes(root / "cache")[0]
            print(f"rehearsal: {family} ...", file=sys.stderr, flush=True)
            status, seconds, peak = run_family(line, env)
            sent = difference(server.counts(), before)
            request_rows += [{"family": family, **c} for c in sent]
            run_json = root / profile / family / "run.json"
            made = (json.loads(run_json.read_text(encoding="utf-8"))["provenance"]
                    if status == "ok" and run_json.is_file() else {})
            result_bytes, files = folder_bytes(root / profile / family)
            rows.append({"family": family, "status": status, "wall_s": round(seconds, 1), "peak_rss_mb": round(peak),
                         **{k: sum(c[k] for c in sent) for k in ("requests", "prompt_tokens", "cap_tokens")},
                         "judge_calls": sum(c["requests"] for c in sent if c["kind"] == "judge"),
                         "cache_calls": made.get("model_calls", 0), "cache_hits": made.get("cache_hits", 0),
                         "cache_bytes": folder_bytes(root / "cache")[0] - cache_before,
                         "result_bytes": result_bytes, "files": files, "load_avg": load_avg()})
            print(f"rehearsal: {family}: {status}, {seconds:.1f} s", file=sys.stderr, flush=True)
    report = pd.DataFrame(rows, columns=list(REPORT_COLUMNS))
    requests = pd.DataFrame(request_rows, columns=list(REQUEST_COLUMNS))
    plan = plan_table(requests, prices)
    report.to_csv(out / "report.csv", index=False)
    requests.to_csv(out / "requests.csv", index=False)
    plan.to_csv(out / "plan.csv", index=False)
    (out / "report.md").write_text(report.to_markdown(index=False, floatfmt=".1f") + "\n", encoding="utf-8")
    shown = plan if prices else plan[["model", "requests", "prompt_tokens", "output_tokens_at_cap"]]
    (out / "plan.md").write_text(shown.to_markdown(index=False, floatfmt=".2f") + "\n", encoding="utf-8")
    (out / "provenance.md").write_text(provenance(started, time.perf_counter() - wall, lines, server.url, profile,
                                                  models, settings, data_dir, keep_cache), encoding="utf-8")
    return report


def provenance(started: datetime.datetime, seconds: float, lines: list[list[str]], url: str, profile: str,
               models: Sequence[str] | None, settings: Sequence[str] | None, data_dir: str | None, keep_cache: bool) -> str:
    """How the tables were made, as Markdown: when, at which commit, at what load, how big, the commands."""
    from finelogic.runs.accuracy import PROFILES

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    names = [s["name"] for s in served_models(profile, url, models)]
    size = (f"profile `{profile}`; accuracy models: {', '.join(names)}"
            + (f" ({len(names)} of the profile's {len(PROFILES[profile].models)})"
               if len(names) < len(PROFILES[profile].models) else "")
            + f"; settings: {', '.join(settings) if settings else 'those of the profile'}"
            + f"; data: {'the real files of FINELOGIC_DATA_DIR' if data_dir else 'no FINELOGIC_DATA_DIR'}"
            + ("; cache kept from the previous rehearsal" if keep_cache else "; empty cache"))

    def shown(word: str) -> str:
        word = word.replace(url, "http://127.0.0.1:PORT/v1")
        return os.path.relpath(word, REPO) if word.startswith(str(REPO)) else word

    commands = "\n".join(" ".join(_quoted(shown(w)) for w in line) for line in lines)
    return (f"Made by `python benchmarks/rehearsal.py` at commit `{commit}`{' (with local changes)' if dirty else ''}, "
            f"started {started:%Y-%m-%d %H:%M} UTC, {seconds / 60:.1f} min wall in all; {size}; load average "
            f"at the end {load_avg()} on {os.cpu_count()} CPU cores. The commands it ran, with "
            f"`OPENAI_BASE_URL` the stand-in server's (PORT its port):\n\n```bash\n{commands}\n```\n")


def _quoted(word: str) -> str:
    return word if word and all(c.isalnum() or c in "-_./:=$" for c in word) else f"'{word}'"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="paper", help="the profile rehearsed (default paper)")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES), help="default: all four")
    parser.add_argument("--models", nargs="+", metavar="NAME",
                        help="these of the profile's accuracy models, e.g. GPT-4o (default all)")
    parser.add_argument("--settings", nargs="+", metavar="SETTING",
                        help="the accuracy settings, e.g. Direct CoT (default: the profile's)")
    parser.add_argument("--root", type=Path, default=REPO / "results" / "rehearsal",
                        help="the rehearsal's cache, results and notebooks (default results/rehearsal)")
    parser.add_argument("--out", type=Path, default=REPO / "book" / "generated-static" / "rehearsal",
                        help="where the tables go (default book/generated-static/rehearsal, what the book includes)")
    parser.add_argument("--keep-cache", action="store_true", help="keep the rehearsal's cache: a cached rerun")
    parser.add_argument("--price", action="append", type=parse_price, default=[], metavar="MODEL=IN/OUT",
                        help="US$ per million input/output tokens, e.g. gpt-4o=2.5/10 (repeatable)")
    parser.add_argument("--data-dir", default=os.environ.get("FINELOGIC_DATA_DIR"),
                        help="the real benchmark files (default $FINELOGIC_DATA_DIR)")
    parser.add_argument("--whitespace-tokens", action="store_true",
                        help="count prompt tokens as whitespace words (default: the embedded SmolLM2 tokenizer)")
    args = parser.parse_args(argv)
    tokenizer = None
    if not args.whitespace_tokens:
        from finelogic.models.embedded import converted_path

        tokenizer = converted_path()
    report = rehearse(args.profile, args.families, root=args.root.resolve(), out=args.out.resolve(),
                      models=args.models, settings=args.settings, keep_cache=args.keep_cache,
                      prices=dict(args.price), data_dir=args.data_dir, tokenizer=tokenizer)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(report.to_string(index=False))
    print(f"tables: {args.out}")
    return 0 if (report["status"] == "ok").all() else 1


if __name__ == "__main__":
    sys.exit(main())
