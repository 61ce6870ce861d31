"""Tables for the book: long-format results in, readable wide tables out."""
from __future__ import annotations

import pandas as pd


def wide(long: pd.DataFrame, index=("model", "setting"), columns: str = "metric",
         values: str = "value") -> pd.DataFrame:
    """Pivot a long ``model, setting, metric, value`` frame to one row per index, keeping printed order.

    Rows and columns appear in the order they first occur in ``long`` (pandas' pivot would sort them).
    """
    index = list(index)
    table = long.pivot_table(index=index, columns=columns, values=values, aggfunc="first", sort=False)
    table = table.reindex(columns=list(dict.fromkeys(long[columns])))
    table.columns.name = None
    return table


def paper_table(name: str) -> pd.DataFrame:
    """The paper's table ``name`` (see :func:`finelogic.paper.reported`) as printed: wide, in order."""
    from finelogic.paper import reported

    return wide(reported(name))


def with_paper(ours: pd.DataFrame, paper_name: str, *, metric_column: str,
               metric_names: dict[str, str] | None = None) -> pd.DataFrame:
    """Our summary rows with the paper's reported value beside each (NaN where the paper has no cell).

    Args:
        ours: a :func:`finelogic.eval.accuracy.summarize` frame with ``model``, ``setting`` and
            ``metric_column`` (e.g. ``dataset`` or ``depth_bucket``).
        paper_name: the table in :func:`finelogic.paper.reported` (``table2``, ``table5``, ...).
        metric_names: our metric values -> the paper's (e.g. ``{"fld": "FLD"}``).

    Returns:
        ``model, setting, <metric_column>, paper, ours, 95% CI, n``: numbers in %, the CI as text.
    """
    from finelogic.paper import reported

    paper = reported(paper_name).rename(columns={"value": "paper"})
    table = ours.copy()
    table["metric"] = table[metric_column].map(lambda m: (metric_names or {}).get(m, m))
    table = table.merge(paper, on=["model", "setting", "metric"], how="left")
    table["ours"] = table["accuracy"].round(1)
    table["95% CI"] = [f"{lo:.1f}–{hi:.1f}" for lo, hi in zip(table["ci_low"], table["ci_high"])]
    return table[["model", "setting", metric_column, "paper", "ours", "95% CI", "n"]]
