"""The datasets page's table and figures (paper Table 1), made from a :class:`finelogic.runs.datasets.DatasetsRun`."""
from __future__ import annotations

import pandas as pd
import seaborn as sns

from finelogic import paper
from finelogic.book import figures
from finelogic.book.tables import Table, present

LABEL_COLUMNS = ["PROVED", "DISPROVED", "UNKNOWN"]


def table1(run) -> pd.DataFrame:
    """The paper's Table 1 (samples, label types) beside what this run loaded, one row per dataset."""
    reported = paper.reported("table1").set_index("model")["value"].astype(int)
    label_types = paper.table1_label_types()
    summary = run.summary.set_index("dataset")
    rows = []
    for s in run.sets.itertuples():
        present = bool(s.present)
        rows.append({
            "dataset": s.paper_name,
            "samples (paper)": reported[s.paper_name],
            "label types (paper)": "{" + ", ".join(label_types[s.paper_name]) + "}",
            "samples (this run)": int(s.samples) if present else "not present",
            "labels (this run)": summary.loc[s.paper_name, "label_types"] if present else "",
            "source (this run)": s.source,
        })
    return pd.DataFrame(rows).set_index("dataset")


def table1_view(run) -> Table:
    """:func:`table1` as the page shows it."""
    return present(table1(run), missing="the dataset is not present in this run (no files; nothing substituted)")


def label_counts_view(run) -> Table:
    """:func:`label_counts` as the page shows it: gold labels per dataset."""
    return present(label_counts(run).rename_axis("dataset"), missing="no items of this dataset")


def n_loaded(run) -> int:
    return int(run.sets["samples"].sum())


def n_present(run) -> int:
    return int(run.sets["present"].astype(bool).sum())


def label_counts(run) -> pd.DataFrame:
    """Gold labels per present dataset."""
    return run.summary.set_index("dataset")[LABEL_COLUMNS]


@figures.themed
def depth_histograms(run):
    """Items per depth (hops or proof steps) for each dataset that has depths: one bar panel per dataset,
    two panels a row, sharing the y axis."""
    names = list(dict.fromkeys(run.depths["dataset"]))
    ncols = min(2, max(len(names), 1))
    nrows = -(-len(names) // ncols) if names else 1
    fig, axes = figures.new_figure(nrows, ncols, height=0.6 + 2.6 * nrows, sharey=True)
    for ax, name in zip(axes.flat, names):
        counts = run.depths[run.depths["dataset"] == name]
        sns.barplot(counts, x="depth", y="items", ax=ax, color=figures.PALETTE[0])
        ax.set_title(name)
        ax.set_xlabel("depth (hops or proof steps)")
        ax.set_ylabel("items")
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.suptitle("Items per depth in this run")
    summary = "; ".join(f"{name}: depths {', '.join(map(str, run.depths[run.depths['dataset'] == name]['depth']))}"
                        for name in names)
    return figures.finish(fig, alt=f"Bar charts, one per dataset, of the number of items at each depth in this run. "
                                   f"{summary}.")
