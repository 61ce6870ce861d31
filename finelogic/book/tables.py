"""Tables for the book: long-format results in, readable wide tables out, all shown in one style
(:func:`present`): human headers, one missing-value mark with a footnote, one interval format, one decimal
for percentages, no pandas index, wide cells wrapped."""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from finelogic.eval.stats import one_decimal
from finelogic.paper import reported, source


def wide(long: pd.DataFrame, index=("model", "setting"), columns: str = "metric",
         values: str = "value") -> pd.DataFrame:
    """Pivot a long ``model, setting, metric, value`` frame to one row per index, rows and columns in the order
    they first occur in ``long`` (pandas' pivot would sort them)."""
    table = long.pivot_table(index=list(index), columns=columns, values=values, aggfunc="first", sort=False)
    table = table.reindex(columns=list(dict.fromkeys(long[columns])))
    table.columns.name = None
    return table


def paper_table(name: str) -> pd.DataFrame:
    """The paper's table ``name`` (see :func:`finelogic.paper.reported`) as printed: wide, in order."""
    return wide(reported(name))


# --------------------------------------------------------------------------------------------------
# One table style for the whole book
# --------------------------------------------------------------------------------------------------

#: The one mark of a missing value in every table of the book.
MISSING = "—"
#: Cell values read as missing: every form a page may show (blank, dashes, n/a, NaN).
_MISSING_TEXT = {"", "—", "–", "-", "n/a", "nan", "NaN", "None", "<NA>"}

_STYLE = ("<style>"
          ".fl-table{max-width:100%;overflow-x:auto;margin:0.4em 0 1em}"
          ".fl-table table{border-collapse:collapse;width:auto;max-width:100%;font-size:0.82em;line-height:1.35}"
          # Words and numbers never break inside; a table wider than the column scrolls in its own box.
          ".fl-table th,.fl-table td{white-space:normal;overflow-wrap:normal;word-break:normal;padding:0.2em 0.45em;"
          "border-bottom:1px solid rgba(128,128,128,0.35);text-align:left;vertical-align:top}"
          ".fl-table td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
          # An interval or a one-word cell (a model name such as SmolLM2-135M-Instruct) never breaks at its hyphens.
          ".fl-table td.nw{white-space:nowrap}"
          ".fl-table th{font-weight:600}"
          ".fl-table .fl-notes{font-size:0.85em;margin:0.3em 0 0;opacity:0.85}"
          "</style>")


def human(name: Any) -> str:
    """A column name as a reader's header: ``all_valid`` -> ``All valid``; tuples (MultiIndex columns)
    joined by spaces; ``n`` and names that already start with a capital or a digit stay as written."""
    if isinstance(name, tuple):
        return " ".join(human(part) for part in name if str(part))
    text = str(name)
    if text == "n":  # humanised, ``N`` would read as a word
        return text
    text = text.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def is_missing(value: Any) -> bool:
    """True for every form of "no value" a results frame holds: None, NaN, pd.NA, blank or dash text."""
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() in _MISSING_TEXT
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def percent(value: Any) -> str:
    """A percentage with one decimal (``12.3``), or the missing mark."""
    return MISSING if is_missing(value) else one_decimal(value)


def interval(value: Any, low: Any, high: Any) -> str:
    """``12.3 [8.1, 17.0]``: a percentage and its interval, one decimal each; the value alone when the
    interval is missing; the missing mark when the value is."""
    if is_missing(value):
        return MISSING
    if is_missing(low) or is_missing(high):
        return percent(value)
    return f"{one_decimal(value)} [{one_decimal(low)}, {one_decimal(high)}]"


def _number(value: Any, digits: int) -> str:
    if is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.{digits}f}"
    return str(value)


@dataclass(frozen=True)
class Table:
    """A results table as the book shows it: every cell already text, footnotes below.

    ``frame`` holds the cells exactly as printed (tests read it); ``notes`` the footnotes. Shown in a page
    (``display(table)``) it renders as HTML without a pandas index, wrapping wide cells."""

    frame: pd.DataFrame
    notes: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.frame.columns)
        rows = []
        # The first column names the row (a model, a setting): kept on one line when every name is short.
        first = len(self.frame.columns) and self.frame.iloc[:, 0].map(len).max() <= 32
        for values in self.frame.itertuples(index=False):
            cells = "".join(
                f'<td class="num">{html.escape(v)}</td>' if c in self.numeric
                else f'<td class="nw">{html.escape(v)}</td>' if _unbroken(v) or (i == 0 and first)
                else f'<td class="txt">{html.escape(v)}</td>' if len(v.split()) >= 4 else f"<td>{html.escape(v)}</td>"
                for i, (c, v) in enumerate(zip(self.frame.columns, values)))
            rows.append(f"<tr>{cells}</tr>")
        notes = "".join(f'<p class="fl-notes">{html.escape(n)}</p>' for n in self.notes)
        return (f'{_STYLE}<div class="fl-table"><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(rows)}</tbody></table>{notes}</div>")

    def __repr__(self) -> str:
        return self.frame.to_string(index=False) + "".join(f"\n{n}" for n in self.notes)


#: A cell kept on one line: a number or interval (``38.0 [29.1, 47.8]``, ``40.0% (n = 5)``) or one short word.
_UNBROKEN = re.compile(r"[-+−]?[\d.,]+%?( \[[-−\d.]+, [-−\d.]+\])?( \(n = \d+\))?|\S{1,28}")


def _unbroken(text: str) -> bool:
    return bool(_UNBROKEN.fullmatch(text.strip()))


def present(frame: pd.DataFrame, *, percent: Sequence[str] = (),
            intervals: Mapping[str, tuple[str, str]] | None = None, headers: Mapping[str, str] | None = None,
            digits: Mapping[str, int] | None = None, missing: str = "no value for this cell",
            note: str | None = None) -> Table:
    """``frame`` in the book's one table style.

    The index (unless a plain 0..n-1 range) becomes the leading columns, so nothing sits in a pandas
    index. ``percent`` columns print with one decimal; ``intervals`` maps a percentage column to its
    ``(low, high)`` columns and prints ``12.3 [8.1, 17.0]`` (the bound columns are dropped); other floats
    print with ``digits[column]`` decimals (default 2), integers as integers, booleans as yes / no. Every
    missing value (NaN, None, blank, dashes, ``n/a``) prints as ``—``, and a footnote says why
    (``missing``) when one occurs. Headers are humanised (:func:`human`) unless ``headers`` names them.
    ``note`` adds a footnote.
    """
    table = frame.copy()
    if isinstance(table.columns, pd.MultiIndex):
        table.columns = [human(c) for c in table.columns]
    if not isinstance(table.index, pd.RangeIndex) or table.index.name is not None:
        table.index.names = [n if n is not None else " " * i for i, n in enumerate(table.index.names)]
        table = table.reset_index()
    intervals = dict(intervals or {})
    cells: dict[str, list[str]] = {}
    numeric = []
    bounds = {column for pair in intervals.values() for column in pair}
    for column in table.columns:
        if column in bounds:
            continue
        values = table[column]
        if column in intervals:
            low, high = intervals[column]
            cells[column] = [interval(v, lo, hi) for v, lo, hi in zip(values, table[low], table[high])]
        elif column in percent:
            cells[column] = [_percent(v) for v in values]
        else:
            cells[column] = [_number(v, (digits or {}).get(column, 2)) for v in values]
        is_number = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
        if column in intervals or column in percent or is_number:
            numeric.append(column)
    shown = pd.DataFrame(cells, index=range(len(table)))
    names = {c: (headers or {}).get(c, human(c)) for c in shown.columns}
    shown = shown.rename(columns=names)
    notes = ([f"{MISSING} {missing}"] if (shown == MISSING).any().any() else []) + ([note] if note else [])
    return Table(shown, tuple(notes), tuple(names[c] for c in numeric))


_percent = percent


def present_paper(name: str, rows: Sequence | None = None) -> Table:
    """The paper's table ``name`` in the book's style: every value a percentage with one decimal
    (``rows``: only these index entries, e.g. the SFT rows)."""
    table = paper_table(name)
    if rows is not None:
        table = table.loc[list(rows)]
    return present(table, percent=list(table.columns), missing="the paper prints no value here",
                   note=f"Reported by the paper ({source(name)}), accuracy or share of samples in %; "
                        "not a result of this repository.")
