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
