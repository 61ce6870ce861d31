"""The claims page (``notebooks/08_claims.ipynb``) and the landing page's short table: the paper's findings
with the verdicts :mod:`finelogic.runs.claims` computed from our runs. Nothing here decides a verdict."""
from __future__ import annotations

import pandas as pd

from finelogic.book.tables import Table, present
from finelogic.runs.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, VERDICTS

#: The verdict table's headers.
HEADERS = {"claim": "finding", "source": "in the paper", "what_paper_says": "what the paper says",
           "verdict": "our verdict", "rule": "rule (95% intervals)", "evidence": "our numbers [95% interval] (n)"}


def verdict_table(run) -> Table:
    """Every claim with its source, the paper's words, our verdict, the rule and the numbers behind it."""
    frame = run.verdicts[["claim", "source", "what_paper_says", "verdict", "rule", "evidence"]]
    return present(frame, headers=HEADERS,
                   note="Verdicts are computed from this run's upstream results (finelogic.runs.claims), never "
                        f"typed: {REPRODUCED} when the 95% intervals separate in the paper's direction, "
                        f"{NOT_REPRODUCED} when they separate in the opposite one, {INCONCLUSIVE} otherwise "
                        "(also when data are missing; the evidence says what).")


def short_table(run) -> Table:
    """The landing page's version: finding, source and verdict only."""
    frame = run.verdicts[["claim", "source", "verdict"]]
    return present(frame, headers={k: HEADERS[k] for k in ("claim", "source", "verdict")},
                   note="Details, numbers and rules: the page “The paper's findings, tested”.")


def counts_sentence(run) -> str:
    """``"Of 11 findings, 2 are reproduced, 1 is not reproduced and 8 are inconclusive at this scale."``"""
    counts = run.counts()
    total = sum(counts.values())
    parts = [f"{counts[v]} {'is' if counts[v] == 1 else 'are'} {v}" for v in VERDICTS if counts[v]]
    if not parts:
        return "This run tested no finding."
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Of the {total} findings tested, {listed}."


def reproduced(run) -> pd.DataFrame:
    """The rows whose verdict is ``reproduced``."""
    return run.verdicts[run.verdicts["verdict"] == REPRODUCED]
