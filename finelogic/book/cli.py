"""The ``finelogic`` command: run the book's notebooks with papermill.

    finelogic list
    finelogic run [--profile tiny] [--notebook 02_accuracy ...] [--seed 0] [--force] [-p model NAME]
"""
from __future__ import annotations

import argparse
import logging
import sys

from finelogic.book.runner import NOTEBOOKS, NotebookFailed, run_notebooks
from finelogic.profiles import PROFILE_NAMES


def _parameter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="finelogic", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the notebook families")
    run = sub.add_parser("run", help="execute notebooks with papermill into book/generated/")
    run.add_argument("--profile", default="tiny", choices=PROFILE_NAMES)
    run.add_argument("--notebook", action="append", choices=NOTEBOOKS, help="repeatable; default: all")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--force", action="store_true", help="rerun notebooks whose inputs did not change")
    run.add_argument("-p", "--parameter", action="append", type=_parameter, default=[],
                     metavar="NAME=VALUE", help="extra notebook parameter (string value)")
    args = parser.parse_args(argv)
    clashing = sorted({name for name, _ in getattr(args, "parameter", []) if name in ("profile", "seed")})
    if clashing:  # one source of truth: the run records and names its profile and seed
        parser.error(f"set {', '.join(clashing)} with --{clashing[0]}, not with -p")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    if args.command == "list":
        print("\n".join(NOTEBOOKS))
        return 0
    try:
        records = run_notebooks(args.profile, args.notebook, seed=args.seed, force=args.force,
                                parameters=dict(args.parameter))
    except NotebookFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for record in records:
        status = "unchanged" if record.skipped else f"{record.seconds:6.1f} s"
        print(f"{record.notebook:16s} {status:>10s}  {record.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
