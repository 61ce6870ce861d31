"""Tables and caption lines of the accuracy (Table 2) and depth (Table 5) pages, from a run's records."""
from __future__ import annotations

import pandas as pd

from finelogic.book.tables import with_paper
from finelogic.data.suites import PAPER_NAMES


def table2(ours: pd.DataFrame) -> pd.DataFrame:
    """Our Table 2 rows (``summarize`` by model, setting, dataset) with the paper's value beside each
    (``—`` where it has none) and the count of responses without an answer; indexed by model, setting and
    the dataset's printed name."""
    table = with_paper(ours, "table2", metric_column="dataset", metric_names=PAPER_NAMES)
    table["no answer"] = ours["no_answer"].to_numpy()
    table["dataset"] = table["dataset"].map(PAPER_NAMES)
    return _paper_dash(table.set_index(["model", "setting", "dataset"]))


def policy_table(ours: pd.DataFrame, compat: pd.DataFrame) -> pd.DataFrame:
    """The same responses read both ways: accuracy (%) under ``principled`` (``ours``) and
    ``paper_code_compat`` (``compat``, summarised by the same columns, in the same order)."""
    both = ours[["model", "setting", "dataset", "n"]].copy()
    both["dataset"] = both["dataset"].map(PAPER_NAMES)
    both["principled (%)"] = ours["accuracy"].round(1)
    both["paper_code_compat (%)"] = compat["accuracy"].round(1).to_numpy()
    return both.set_index(["model", "setting", "dataset"])


def table5(summary: pd.DataFrame) -> pd.DataFrame:
    """Our Table 5 rows (a depth run's ``summary``) with the paper's value beside each (``—`` where none)."""
    table = with_paper(summary, "table5", metric_column="depth_bucket")
    return _paper_dash(table.set_index(["model", "setting", "depth_bucket"]))


def data_note(sets: pd.DataFrame) -> str:
    """`` Data: FLD: <source>; ...`` for a caption, then the test sets without items, if any."""
    sources = "; ".join(f"{name}: {source}" for name, source in zip(sets["paper_name"], sets["source"]))
    absent = sets.loc[~sets["present"].astype(bool), "paper_name"].tolist()
    note = f" Data: {sources}."
    return note + (f" **Not present** (no files, nothing substituted): {', '.join(absent)}." if absent else "")


def _paper_dash(table: pd.DataFrame) -> pd.DataFrame:
    return table.astype({"paper": object}).fillna({"paper": "—"})
