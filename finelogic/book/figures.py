"""Figures for the book (matplotlib; one function per figure family, returning the Figure)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd


def show(fig, dpi: int = 110) -> None:
    """Display ``fig`` as a PNG in the notebook and close it, whatever matplotlib backend is active
    (with ``MPLBACKEND=Agg``, as in CI, a bare figure would reach the executed notebook as text only)."""
    import io

    from IPython.display import Image, display

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    display(Image(data=buffer.getvalue()))


def accuracy_by_group(table: pd.DataFrame, *, title: str, ylabel: str = "accuracy (%)",
                      reference: pd.DataFrame | None = None, ax=None):
    """Line plot: one line per row of ``table`` (index = series label), x = its columns in order.

    ``reference`` rows (e.g. the paper's numbers) are drawn dashed beside ``table``'s solid lines.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
    else:
        fig = ax.figure
    x = range(len(table.columns))
    for label, row in table.iterrows():
        ax.plot(x, row.to_numpy(dtype=float), marker="o", label=_label(label))
    if reference is not None:
        for label, row in reference.iterrows():
            ax.plot(x, row.to_numpy(dtype=float), linestyle="--", marker=".", alpha=0.7,
                    label=f"{_label(label)} (reported)")
    ax.set_xticks(list(x), [str(c) for c in table.columns])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def grouped_bars(table: pd.DataFrame, *, title: str, ylabel: str = "accuracy (%)", ax=None):
    """Grouped bar chart: groups = columns of ``table``, one bar per row."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.2))
    else:
        fig = ax.figure
    n_rows = max(len(table), 1)
    width = 0.8 / n_rows
    for i, (label, row) in enumerate(table.iterrows()):
        positions = [j + (i - (n_rows - 1) / 2) * width for j in range(len(table.columns))]
        ax.bar(positions, row.to_numpy(dtype=float), width=width, label=_label(label))
    ax.set_xticks(range(len(table.columns)), [str(c) for c in table.columns])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def _label(label) -> str:
    return " / ".join(str(part) for part in label if str(part)) if isinstance(label, tuple) else str(label)
