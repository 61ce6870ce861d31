"""The ``finelogic`` command: run the book's notebooks with papermill.

Also ``eval`` (your models, one HTML report), ``list``, ``study``, ``store``, ``tasks`` (the lm-evaluation-harness
task folder), ``export-llamafactory`` and ``train``; ``finelogic <command> --help`` lists each one's options.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from finelogic.book.runner import NOTEBOOKS, NotebookFailed, run_notebooks
from finelogic.paper import STYLES
from finelogic.profiles import PROFILE_NAMES
from finelogic.runs.registry import FAMILIES, family, names
from finelogic.store import StoreError


def _parameter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _yaml_parameters(text: str) -> dict[str, Any]:
    import yaml

    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise argparse.ArgumentTypeError(f"not YAML: {text!r} ({error})") from None
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise argparse.ArgumentTypeError(f"expected a YAML mapping of parameter names, e.g. "
                                         f"'models: [embedded]', got {text!r}")
    return values


def _store(args: argparse.Namespace) -> int:
    """Where the store is and what it holds (rows per verb and model, per memo, per generated set, claims now)."""
    from finelogic.config import store_path
    from finelogic.store import open_store

    path = store_path()
    if not path.is_file():
        print(f"{path}: no store yet (nothing cached)")
        return 0
    store = open_store(path)
    print(f"{path} ({sum(p.stat().st_size for p in path.parent.glob(path.name + '*')) / 1e6:.1f} MB with its log)")
    for table, what, which, rows in store.summary():
        print(f"{table:7s} {what:28s} {which:48s} {rows:9d}")
    print(f"look inside: sqlite3 {path}; clear: rm {path}*  (while no run is going)")
    return 0


def _export(args: argparse.Namespace) -> int:
    from finelogic.runs.supervision import style_examples
    from finelogic.sft.export import export_llamafactory

    _, examples = style_examples(args.profile, args.style, args.seed)
    written = export_llamafactory(examples, args.style, args.out)
    print(f"{args.style}: {len(examples)} examples")
    for what, path in written.items():
        print(f"{what:13s} {path}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from finelogic.runs.training import train_style

    trained = train_style(args.style, profile=args.profile, base=args.base, out=args.out, seed=args.seed,
                          max_steps=args.max_steps, resume=not args.fresh, save_steps=args.save_steps)
    print(f"{trained.name}: {trained.steps} steps, {trained.tokens} tokens in {trained.seconds:.1f} s; "
          f"open it as ckpt:{trained.path}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from finelogic.book.report import write_report
    from finelogic.data.datasets import DataDirError, DataNotFoundError
    from finelogic.evaluate import evaluate
    from finelogic.models.openai_backend import RequestFailed, ServerUnreachable

    try:
        made = evaluate(args.model, profile=args.profile, families=args.families, out=args.out, seed=args.seed,
                        data_dir=args.data_dir)
    except (ValueError, ServerUnreachable, RequestFailed, DataNotFoundError, DataDirError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for note in made.notes:
        print(f"note: {note}")
    for family, why in made.skipped.items():
        print(f"skipped {family}: {why}")
    for family in made.runs:
        print(f"{family:10s} {made.out / family}")
    print(f"report: {write_report(made, made.out / 'report.html')}")
    return 0


def _tasks(args: argparse.Namespace) -> int:
    """The lm-evaluation-harness task folder (``--lm-eval``: its path alone, for ``--include_path``), or its tasks."""
    from finelogic.lm_eval_tasks import TASKS_DIR

    if args.lm_eval:
        print(TASKS_DIR)
        return 0
    print(f"lm-evaluation-harness tasks in {TASKS_DIR} (lm_eval --include_path \"$(finelogic tasks --lm-eval)\"):")
    for path in sorted(TASKS_DIR.glob("finelogic_*.yaml")):
        print(f"  {path.stem}")
    print("  finelogic_accuracy (the four answer-level tasks)")
    return 0


def _study(args: argparse.Namespace) -> int:
    from finelogic import study

    if args.status:
        print(study.status(args.profile).to_string(index=False))
        return 0
    units = [u.strip() for u in args.units.split(",") if u.strip()] if args.units else None
    if args.assemble_only:
        made = study.assemble(args.profile, seed=args.seed)
    else:
        made = study.run_study(args.profile, units=units, again=args.again, seed=args.seed)
    print(study.status(args.profile).to_string(index=False))
    for why in made.left_out.values():
        print(f"left out: {why}")
    if made.missing:
        print(f"not in the study: {', '.join(made.missing)} (run `finelogic study` again later: it "
              "makes the units not yet done and those made with another config)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="finelogic", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    evaluation = sub.add_parser("eval", help="evaluate your models the FineLogic way: accuracy, depth, soundness, "
                                "probing and LogicMark, written as CSV + JSON and one HTML report")
    evaluation.add_argument("--model", action="append", required=True, metavar="SPEC",
                            help="embedded, hf:NAME_OR_PATH, openai:NAME@URL (vLLM or any OpenAI-compatible "
                            "server), gguf:FILE, ckpt:DIR (repeatable)")
    evaluation.add_argument("--profile", default="tiny", choices=PROFILE_NAMES, help="sample sizes (default tiny)")
    evaluation.add_argument("--families", nargs="+", metavar="FAMILY",
                            help="accuracy, depth, soundness, probing, logicmark (default: all)")
    evaluation.add_argument("--out", help="the folder (default results/eval/<models>-<profile>)")
    evaluation.add_argument("--seed", type=int, default=0)
    evaluation.add_argument("--data-dir", help="real benchmark files (default $FINELOGIC_DATA_DIR)")
    sub.add_parser("list", help="list the notebook families")
    run = sub.add_parser("run", help="execute notebooks with papermill into book/generated/")
    run.add_argument("--profile", default="tiny", choices=PROFILE_NAMES)
    run.add_argument("--family", action="append", choices=names(), help="a notebook family's page (repeatable)")
    run.add_argument("--notebook", action="append", choices=NOTEBOOKS,
                     help="a notebook by its file stem (repeatable); with neither option: all")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--force", action="store_true", help="rerun notebooks whose inputs did not change")
    run.add_argument("--output-dir", metavar="DIR", help="where the executed notebooks go (default book/generated)")
    run.add_argument("--jobs", type=int, default=1, metavar="N",
                     help="notebooks run at once, each in its own process (default 1); a notebook waits for "
                          "the ones whose results it reads; PyTorch gets cores/N threads in each")
    run.add_argument("-p", "--parameter", action="append", type=_parameter, default=[],
                     metavar="NAME=VALUE", help="extra notebook parameter (string value)")
    run.add_argument("-y", "--yaml", action="append", type=_yaml_parameters, default=[], metavar="YAML",
                     help="extra notebook parameters as a YAML mapping, for lists and mappings "
                          "(e.g. -y 'models: [openai:NAME@URL]')")
    study_cmd = sub.add_parser("study", help="the laptop-scale study in units (base, SFT-<style>) that each finish "
                               "and are written on their own; runs those not done, then assembles results/study/")
    study_cmd.add_argument("--profile", default="study", choices=PROFILE_NAMES)
    study_cmd.add_argument("--units", help="comma-separated units (default: every unit not yet done, in order)")
    study_cmd.add_argument("--again", action="store_true", help="rerun the named units even when done")
    study_cmd.add_argument("--assemble-only", action="store_true", help="merge the units done; run none")
    study_cmd.add_argument("--status", action="store_true", help="which units are done, when and at what load")
    study_cmd.add_argument("--seed", type=int, default=0)
    sub.add_parser("store", help="where the one store (model calls, memos, generated sets) is, and what it holds")
    tasks = sub.add_parser("tasks", help="FineLogic's benchmarks as lm-evaluation-harness tasks")
    tasks.add_argument("--lm-eval", action="store_true", help="print only the folder to pass to lm_eval --include_path")
    styles = (*STYLES, "LogiPT")
    export = sub.add_parser("export-llamafactory", help="one style's training set in LLaMA-Factory's format, "
                            "its dataset_info.json entry and the released recipe's YAML for llama3 and qwen")
    export.add_argument("--style", required=True, choices=styles)
    export.add_argument("--profile", default="paper", choices=PROFILE_NAMES)
    export.add_argument("--out", required=True, help="the folder (LLaMA-Factory's dataset_dir)")
    export.add_argument("--seed", type=int, default=0)
    trainer = sub.add_parser("train", help="fine-tune one style with TRL's SFTTrainer (launch with `accelerate "
                             "launch -m finelogic.runs.training` for several processes); resumes its last checkpoint")
    trainer.add_argument("--style", required=True, choices=styles)
    trainer.add_argument("--profile", default="paper", choices=PROFILE_NAMES)
    trainer.add_argument("--base", default=None, help="llama3, qwen or a model spec (default: the profile's)")
    trainer.add_argument("--out", default=None, help="output folder (default: the cache's sft-trl/<base>-<style>)")
    trainer.add_argument("--seed", type=int, default=0)
    trainer.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps")
    trainer.add_argument("--save-steps", type=int, default=None, help="a checkpoint every N steps (default: per epoch)")
    trainer.add_argument("--fresh", action="store_true", help="ignore checkpoints in --out and start again")
    args = parser.parse_args(argv)
    parameters = dict(getattr(args, "parameter", []))
    for values in getattr(args, "yaml", []):
        parameters |= values
    clashing = sorted(name for name in parameters if name in ("profile", "seed"))
    if clashing:  # one source of truth: the run records and names its profile and seed
        parser.error(f"set {', '.join(clashing)} with --{clashing[0]}, not with -p or -y")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    if args.command == "list":
        reads = {f.notebook: f"{f.name} family" + (f", reads {', '.join(f.upstream)}" if f.upstream else "")
                 for f in FAMILIES}
        print("\n".join(f"{n:20s} {reads.get(n, 'teaching chapter')}" for n in NOTEBOOKS))
        return 0
    commands = {"eval": _eval, "store": _store, "study": _study, "tasks": _tasks,
                "export-llamafactory": _export, "train": _train}
    try:
        if args.command in commands:
            return commands[args.command](args)
        chosen = [family(n).notebook for n in args.family or ()] + list(args.notebook or ())
        records = run_notebooks(args.profile, chosen or None, seed=args.seed, force=args.force,
                                parameters=parameters, jobs=args.jobs,
                                output_dir=Path(args.output_dir).resolve() if args.output_dir else None)
    except (NotebookFailed, StoreError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for record in records:
        status = "unchanged" if record.skipped else f"{record.seconds:6.1f} s"
        print(f"{record.notebook:16s} {status:>10s}  {record.output}")
        if record.damaged:
            print(f"{'':16s} rerun although unchanged: its results did not read back ({record.damaged})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
