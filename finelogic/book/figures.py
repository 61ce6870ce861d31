"""Figures for the book: one seaborn theme (:func:`theme`), one display helper (:func:`show`), one function per
figure family, each returning a Figure with alt text (:func:`finish`). Ours are drawn in seaborn's colour-blind
palette; the paper's rows as dark grey hollow markers with dashed lines, labelled ``paper: <model> (reported)``.
"""
from __future__ import annotations

import base64
import functools
import html
import io
import textwrap
from typing import Any, Callable, Sequence

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
import pandas as pd
import seaborn as sns
from cycler import cycler
from IPython.display import display
from matplotlib.patches import FancyArrowPatch
from matplotlib.path import Path
from matplotlib.text import Text

from finelogic.book.tables import paper_table
from finelogic.logic.proof import parse_proof_steps

#: Widest figure in inches (shown at 96 CSS px per inch: 672 px, the width of a cell output in the book at a
#: 1280 px window in dark mode, padding included).
PAGE_WIDTH = 7.0
#: Smallest font on any figure, in points at page width.
MIN_FONT = 10.0
#: Font size of labels, ticks and legends; titles are one point larger.
FONT = 11.0
#: Pixels per inch of the PNG (1.5x the CSS size, sharp on high-density screens).
DPI = 144
#: Our rows (seaborn "colorblind").
PALETTE = sns.color_palette("colorblind")
#: The paper's (or a card's) rows: dark grey, hollow markers, dashed.
REFERENCE_COLOUR = "#3b3b3b"
REFERENCE_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">")
OURS_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">")
#: The grey border round every figure (the figure face is white in light and dark mode alike).
BORDER = "#b0b0b0"


def theme() -> dict[str, Any]:
    """The book's matplotlib settings: seaborn's ``whitegrid``, :data:`FONT` pt fonts, white face."""
    rc = dict(sns.axes_style("whitegrid"))
    rc.update(sns.plotting_context("notebook", rc={
        "font.size": FONT, "axes.labelsize": FONT, "axes.titlesize": FONT + 1, "xtick.labelsize": FONT,
        "ytick.labelsize": FONT, "legend.fontsize": FONT, "legend.title_fontsize": FONT,
        "figure.titlesize": FONT + 1}))
    rc.update({"axes.prop_cycle": cycler(color=PALETTE), "figure.facecolor": "white", "savefig.facecolor": "white",
               "axes.facecolor": "white", "figure.edgecolor": BORDER, "figure.constrained_layout.use": True,
               "legend.frameon": False, "axes.titleweight": "normal", "axes.edgecolor": "#808080"})
    return rc


def themed(draw: Callable) -> Callable:
    """Decorator: run a figure function under :func:`theme` (no global matplotlib state is changed)."""
    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with plt.rc_context(theme()):
            return draw(*args, **kwargs)
    return wrapper


def new_figure(nrows: int = 1, ncols: int = 1, *, height: float = 4.0, width: float = PAGE_WIDTH, **kwargs):
    """``plt.subplots`` at page width with the grey border; ``axes`` always a 2-D array."""
    return plt.subplots(nrows, ncols, figsize=(min(width, PAGE_WIDTH), height), squeeze=False,
                        layout="constrained", linewidth=1.0, edgecolor=BORDER, **kwargs)


# ---------------------------------------------------------------------------------------------- display

def alt_text(fig) -> str:
    """The figure's alt text: what :func:`finish` attached, else a plain description read off ``fig``: title,
    per panel its axis labels and x categories, legend series."""
    if getattr(fig, "finelogic_alt", None):
        return fig.finelogic_alt
    parts = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        parts.append(fig._suptitle.get_text() + ".")
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        bits = []
        if ax.get_title():
            bits.append(f"Panel '{ax.get_title()}':")
        if ax.get_ylabel() or ax.get_xlabel():
            bits.append(f"{ax.get_ylabel() or 'value'} against {ax.get_xlabel() or 'category'}")
        ticks = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels() if t.get_text()]
        if all(_is_number(t) for t in ticks):
            ticks = []  # a numeric scale, not categories
        if ticks and len(ticks) <= 12:
            bits.append("(" + ", ".join(ticks) + ")")
        parts.append(" ".join(bits) + ".")
    labels = [t.get_text() for legend in fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
              for t in legend.get_texts()]
    if labels:
        parts.append("Series: " + "; ".join(dict.fromkeys(labels)) + ".")
    return " ".join(p for p in parts if p.strip(". ")) or "A figure."


def _is_number(text: str) -> bool:
    try:
        float(text.replace("\u2212", "-"))
    except ValueError:
        return False
    return True


def figure_html(fig, alt: str | None = None) -> str:
    """``fig`` as an ``<img>`` (PNG data URI) with ``alt``, at 96 CSS px per inch, and closed; on a narrow
    screen it keeps the ``min-width`` at which its smallest text is :data:`MIN_FONT` pt and scrolls in its box
    (``data-font-pt`` and ``data-css-width`` let a test work out the text size a reader sees)."""
    with plt.rc_context(theme()):
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    width_px = round(fig.get_size_inches()[0] * 96)
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    font = float(min(sizes)) if sizes else FONT
    min_px = min(width_px, int(np.ceil(width_px * MIN_FONT / font)))
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    text = html.escape(alt or alt_text(fig), quote=True)
    return (f'<div class="finelogic-figure-box" style="max-width:100%;overflow-x:auto">'
            f'<img class="finelogic-figure" src="data:image/png;base64,{data}" alt="{text}" '
            f'width="{width_px}" data-css-width="{width_px}" data-font-pt="{font:g}" '
            f'style="max-width:100%;min-width:{min_px}px;height:auto"></div>')


def show(fig, alt: str | None = None) -> None:
    """Display ``fig`` as HTML ``<img alt=...>`` and close it (MyST-NB 1.x takes a PNG output's alt text only
    from cell metadata)."""
    display({"text/html": figure_html(fig, alt), "text/plain": f"[figure: {alt or alt_text(fig)}]"}, raw=True)


# ---------------------------------------------------------------------------------------------- shared parts

def label(value) -> str:
    """A row label as text: tuples joined with `` / `` (empty parts dropped), never ``('a', 'b')``."""
    if isinstance(value, tuple):
        return " / ".join(str(part) for part in value if str(part))
    return str(value)


def wrap(text: str, width: int = 14) -> str:
    """``text`` broken onto lines of at most ``width`` characters (tick labels that would overlap)."""
    return "\n".join(textwrap.wrap(str(text), width, break_on_hyphens=False)) or str(text)


def set_categories(ax, labels: Sequence[str]) -> None:
    """Categorical x ticks at 0..n-1 with ``labels``, wrapped to the space per category so neighbours never overlap."""
    labels = [label(x) for x in labels]
    inches = ax.get_position().width * ax.figure.get_size_inches()[0]
    chars = max(6, int(inches * 72 / (0.6 * FONT) / max(len(labels), 1)) - 1)
    ax.set_xticks(range(len(labels)), [wrap(x, chars) for x in labels])


def legend_below(fig, handles=None, labels=None) -> None:
    """One legend for the whole figure, below the panels (never over the data)."""
    if handles is None:
        seen: dict[str, Any] = {}
        for ax in fig.axes:
            for handle, text in zip(*ax.get_legend_handles_labels()):
                if not text.startswith("_"):
                    seen.setdefault(text, handle)
        labels, handles = list(seen), list(seen.values())
    if not handles:
        return
    longest = max(len(str(t)) for t in labels)
    ncol = max(1, min(len(labels), int(PAGE_WIDTH * 72 / (0.6 * FONT * (longest + 5)))))
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=FONT)
    rows = -(-len(labels) // ncol)
    fig.set_figheight(fig.get_figheight() + 0.25 * rows)  # the legend takes room, not the panels


def finish(fig, *, alt: str | None = None):
    """Fix tick label sizes to the theme (ticks are made at draw time) and attach ``alt`` as ``fig``'s alt text."""
    for ax in fig.axes:
        ax.tick_params(labelsize=FONT)
    if alt:
        fig.finelogic_alt = " ".join(alt.split())
    return fig


def _values(row) -> np.ndarray:
    return pd.to_numeric(pd.Series(row), errors="coerce").to_numpy(dtype=float)


def _summary(frame: pd.DataFrame, unit: str = "%") -> str:
    """``"ours: 0% everywhere"``-style sentence on a table of our values (for titles and alt text)."""
    values = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    if np.all(np.isnan(values)):
        return "no value of ours (nothing scored)"
    if np.all(np.isnan(values) | (values == 0)):
        return f"ours are 0{unit} everywhere"
    return f"ours range {np.nanmin(values):.1f}-{np.nanmax(values):.1f}{unit}"


# ---------------------------------------------------------------------------------------------- line charts

@themed
def accuracy_by_group(table: pd.DataFrame, *, title: str, ylabel: str = "accuracy (%)", xlabel: str = "",
                      reference: pd.DataFrame | None = None, reference_name: str = "paper",
                      low: pd.DataFrame | None = None, high: pd.DataFrame | None = None, chance: float | None = None):
    """Line chart: one line per row of ``table`` (ours, solid, filled markers, dodged sideways so identical
    lines stay visible), x = its columns; ``reference`` rows dashed grey with hollow markers, labelled
    ``<reference_name>: <row> (reported)``; ``low``/``high`` a shaded 95% band per row; ``chance`` a dotted
    line. The title says so when ours are all 0 or missing."""
    fig, axes = new_figure(height=4.6)
    ax = axes[0, 0]
    n = len(table)
    x = np.arange(len(table.columns), dtype=float)
    for i, (name, row) in enumerate(table.iterrows()):
        offset = (i - (n - 1) / 2) * min(0.08, 0.3 / max(n, 1)) if n > 1 else 0.0
        ax.plot(x + offset, _values(row), marker=OURS_MARKERS[i % len(OURS_MARKERS)], markersize=7,
                linewidth=2, color=PALETTE[i % len(PALETTE)], label=f"ours: {label(name)}", zorder=3)
    if reference is not None:
        for j, (name, row) in enumerate(reference.iterrows()):
            ax.plot(x, _values(row.reindex(table.columns)), linestyle="--", linewidth=1.2,
                    marker=REFERENCE_MARKERS[j % len(REFERENCE_MARKERS)], markersize=7, markerfacecolor="white",
                    color=REFERENCE_COLOUR, alpha=0.85, label=f"{reference_name}: {label(name)} (reported)", zorder=2)
    if low is not None and high is not None:
        for i, name in enumerate(table.index):
            ax.fill_between(range(len(table.columns)), _values(low.loc[name]), _values(high.loc[name]),
                            color=PALETTE[i % len(PALETTE)], alpha=0.12, linewidth=0, label="ours: 95% interval"
                            if i == 0 else "_nolegend_")
    if chance is not None:
        ax.axhline(chance, color="#6b6b6b", linewidth=1.2, linestyle=":", label=f"chance ({chance:g}%)", zorder=1)
    set_categories(ax, list(table.columns))
    ax.set_xlabel(xlabel or (table.columns.name or "group"))
    ax.set_ylabel(ylabel)
    ax.set_ylim(-2, 102)
    if len(table) and not _summary(table).startswith("ours range"):  # all 0 or missing: the title says so
        title = f"{title} ({_summary(table)})"
    ax.set_title(wrap(title, 60))
    legend_below(fig)
    return finish(fig, alt=f"Line chart: {title}. {ylabel} by {ax.get_xlabel()} "
                           f"({', '.join(map(str, table.columns))}). Solid lines, ours: "
                           f"{'; '.join(label(i) for i in table.index)} ({_summary(table)})."
                           + (f" Dashed grey lines, {reference_name} (reported): "
                              f"{'; '.join(label(i) for i in reference.index)}." if reference is not None else ""))


@themed
def grouped_bars(table: pd.DataFrame, *, title: str, ylabel: str = "accuracy (%)", xlabel: str = "",
                 ylim: tuple[float, float] | None = None, chance: float | None = None):
    """Grouped bars: groups = columns of ``table``, one bar per row (height 0 marked at the axis); ``chance`` dotted."""
    fig, axes = new_figure(height=4.2)
    ax = axes[0, 0]
    long = table.copy()
    long.index = [label(i) for i in long.index]
    long.columns = [label(c) for c in long.columns]
    long = long.rename_axis(index="series", columns="group").stack(future_stack=True).rename("value").reset_index()
    long["value"] = pd.to_numeric(long["value"], errors="coerce")
    sns.barplot(long, x="group", y="value", hue="series", ax=ax, palette=PALETTE[:max(len(table), 1)],
                legend=True)
    ax.get_legend().remove()
    for bar in ax.patches:
        if bar.get_height() == 0:
            ax.plot([bar.get_x(), bar.get_x() + bar.get_width()], [0, 0], color=bar.get_facecolor(), linewidth=4,
                    solid_capstyle="butt", zorder=4)
    if chance is not None:
        ax.axhline(chance, color="#6b6b6b", linewidth=1.2, linestyle=":", label=f"chance ({chance:g}%)")
    set_categories(ax, list(dict.fromkeys(long["group"])))
    ax.set_xlabel(xlabel or (table.columns.name or ""))
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_title(wrap(title, 60))
    legend_below(fig)
    return finish(fig, alt=f"Bar chart: {title}. {ylabel} per {ax.get_xlabel() or 'group'} "
                           f"({', '.join(map(label, table.columns))}), one bar per "
                           f"{'; '.join(label(i) for i in table.index)}.")


# ---------------------------------------------------------------------------------------------- paper vs ours

@themed
def paper_vs_ours(ours: pd.DataFrame, reported: pd.DataFrame, *, title: str, xlabels: dict[str, str] | str,
                  low: pd.DataFrame | None = None, high: pd.DataFrame | None = None, shared_x: bool = True):
    """Dot plot, one panel per metric (ours' columns) sharing the y axis: the paper's rows (hollow grey) above
    ours (filled, with ``low``/``high`` whiskers; a missing value marked ``no value`` at 0). ``xlabels``: metric
    -> axis label, or one label for all; ``shared_x`` False gives each panel its own scale from 0 (units differ,
    e.g. Table 4's steps vs %)."""
    metrics = list(ours.columns)
    if ours.empty:  # one visible "no value" row rather than a figure that shows the paper alone
        ours = pd.DataFrame([[np.nan] * len(metrics)], columns=metrics, index=["nothing evaluated in this run"])
    names = [f"paper: {label(i)}" for i in reported.index] + [f"ours: {label(i)}" for i in ours.index]
    fig, axes = new_figure(1, len(metrics), height=1.5 + 0.42 * len(names), sharey=True, sharex=shared_x)

    def column(frame, metric) -> np.ndarray:  # by position: an index of tuples is ambiguous to .loc
        return _values(frame[metric]) if metric in frame else np.full(len(frame), np.nan)

    for ax, metric in zip(axes[0], metrics):
        for y, value in enumerate(column(reported, metric)):
            ax.plot([value], [y], marker="o", markersize=8, markerfacecolor="white", markeredgecolor=REFERENCE_COLOUR,
                    markeredgewidth=1.5, linestyle="none", label="paper (reported)")
        whiskers = low is not None and high is not None
        lows, highs = (column(low, metric), column(high, metric)) if whiskers else (None, None)
        for k, value in enumerate(column(ours, metric)):
            y = len(reported) + k
            if np.isnan(value):
                ax.plot([0], [y], marker="x", color=PALETTE[3], markersize=8, linestyle="none",
                        label="ours: no value (nothing scored)")
                continue
            if whiskers and not (np.isnan(lows[k]) or np.isnan(highs[k])):
                ax.plot([lows[k], highs[k]], [y] * 2, color=PALETTE[0], linewidth=2.5, alpha=0.5,
                        label="ours: 95% interval", solid_capstyle="butt")
            ax.plot([value], [y], marker="o", markersize=8, color=PALETTE[0], linestyle="none", label="ours (this run)")
        ax.set_xlabel(wrap(xlabels if isinstance(xlabels, str) else xlabels.get(metric, metric), 16))
        ax.set_title(wrap(_metric_title(metric), 24))
        if shared_x:
            ax.set_xlim(-5, 105)
        else:  # the panel's own scale from 0, with room for whole markers at both ends
            values = pd.to_numeric(pd.concat([reported.get(metric, pd.Series(dtype=float)),
                                              ours[metric]]), errors="coerce")
            top = max(float(np.nanmax(values)) if values.notna().any() else 1.0, 1.0)
            ax.set_xlim(-0.08 * top, 1.1 * top)
        ax.axhline(len(reported) - 0.5, color=BORDER, linewidth=1)
    axes[0, 0].set_yticks(range(len(names)), [wrap(name, 34) for name in names])
    axes[0, 0].invert_yaxis()
    axes[0, 0].set_ylabel("model / setting")
    fig.get_layout_engine().set(wspace=0.06)
    fig.suptitle(wrap(title, 60))
    legend_below(fig)
    finish(fig, alt=f"Dot plot: {title}. One panel per metric ({', '.join(map(_metric_title, metrics))}); rows: "
                    f"the paper's {len(reported)} reported rows as hollow grey circles, then our "
                    f"{len(ours)} rows as filled circles ({_summary(ours, '')}).")
    return fig


def _metric_title(metric) -> str:
    return {"all_valid": "All valid", "all_relevant": "All relevant", "all_atomic": "All atomic"}.get(
        str(metric), label(metric))


@themed
def accuracy_bars(summary: pd.DataFrame, *, names: dict[str, str] | None = None):
    """One panel per prompting setting: our accuracy per dataset as bars with 95% whiskers, one bar per model,
    from a :func:`finelogic.eval.accuracy.summarize` by ``(model, setting, dataset)``; the paper's models in
    the same setting (Table 2) as hollow grey marks; ``names`` maps dataset keys to printed names."""
    reported = paper_table("table2")
    title = "Accuracy by dataset: ours (bars, 95% Wilson intervals) and the paper's (hollow marks)"
    summary = summary.assign(dataset=[(names or {}).get(d, d) for d in summary["dataset"]])
    datasets = list(dict.fromkeys(summary["dataset"]))
    settings = list(dict.fromkeys(summary["setting"]))
    models = list(dict.fromkeys(summary["model"]))
    fig, axes = new_figure(len(settings), 1, height=1.2 + 2.6 * len(settings), sharex=True, sharey=True)
    width = 0.7 / max(len(models), 1)
    x = np.arange(len(datasets))
    for ax, setting in zip(axes[:, 0], settings):
        for i, model in enumerate(models):
            chosen = (summary.model == model) & (summary.setting == setting)
            rows = summary[chosen].set_index("dataset").reindex(datasets)
            pos = x + (i - (len(models) - 1) / 2) * width
            acc = rows["accuracy"].to_numpy(dtype=float)
            ax.bar(pos, acc, width * 0.9, color=PALETTE[i % len(PALETTE)], label=f"ours: {model}", zorder=2)
            ax.errorbar(pos, acc, yerr=[acc - rows["ci_low"].to_numpy(dtype=float),
                                        rows["ci_high"].to_numpy(dtype=float) - acc],
                        fmt="none", ecolor="black", capsize=3, linewidth=1, zorder=3, label="ours: 95% interval")
            zero = np.nan_to_num(acc, nan=-1) == 0
            ax.plot(pos[zero], np.zeros(zero.sum()), linestyle="none", marker="_", markersize=16,
                    markeredgewidth=3, color=PALETTE[i % len(PALETTE)], zorder=4)
        paper_rows = [i for i in reported.index if i[1] == setting]
        for j, key in enumerate(paper_rows):
            values = reported.loc[key].reindex(datasets).to_numpy(dtype=float)
            ax.plot(x + 0.36 + 0.06 * (j - (len(paper_rows) - 1) / 2), values, linestyle="none",
                    marker=REFERENCE_MARKERS[j % len(REFERENCE_MARKERS)], markersize=8, markerfacecolor="white",
                    markeredgecolor=REFERENCE_COLOUR, markeredgewidth=1.5,
                    label=f"paper: {key[0]} (reported)", zorder=4)
        mine = summary[summary.setting == setting]["accuracy"]
        note = " (ours 0% on every dataset)" if len(mine) and (mine.fillna(0) == 0).all() else ""
        ax.set_title(f"{setting}{note}" + ("" if paper_rows else " (no paper row for this setting)"))
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(-3, 103)
    set_categories(axes[-1, 0], datasets)
    axes[-1, 0].set_xlabel("dataset")
    fig.suptitle(wrap(title, 60))
    legend_below(fig)
    return finish(fig, alt=f"Bar chart in {len(settings)} panel(s), one per prompting setting "
                           f"({', '.join(settings)}): accuracy (%) per dataset ({', '.join(datasets)}). Bars: ours "
                           f"({', '.join(models)}; {_summary(summary[['accuracy']])}), with 95% intervals; hollow "
                           f"grey marks: the paper's reported models in the same setting (Table 2).")


def accuracy_by_depth(curves: pd.DataFrame, reported: pd.DataFrame, *, settings: Sequence[str] = ("Direct",),
                      title: str = "FLD accuracy by proof depth: ours (solid) and the paper's Direct rows (dashed)"):
    """Our accuracy by FLD depth bucket (rows of ``curves``) beside the paper's rows of Table 5 in ``settings``
    (GPT-4o / Direct is always among them), dashed."""
    reference = reported.loc[[i for i in reported.index if i[1] in settings or i == ("GPT-4o", "Direct")],
                             list(curves.columns)]
    reference.index = [f"{i[0].removesuffix('-Instruct')} / {i[1]}" for i in reference.index]
    return accuracy_by_group(curves, reference=reference, xlabel="proof depth (steps)", title=title)


@themed
def paper_figure3(reported: pd.DataFrame):
    """The paper's Figure 3 redrawn from its Table 5: one panel per fine-tuned base model with its SFT rows,
    GPT-4o / Direct dashed in each."""
    models, reference = ("Llama-3.1-8B-Instruct", "Qwen-2.5-7B-Instruct"), ("GPT-4o", "Direct")
    fig, axes = new_figure(1, len(models), height=4.8, sharey=True)
    baseline = reported.loc[[reference]]
    baseline.index = [" / ".join(reference)]
    for ax, model in zip(axes[0], models):
        rows = reported.loc[[i for i in reported.index if i[0] == model and i[1].startswith("SFT")]]
        rows.index = [i[1] for i in rows.index]
        for i, (name, row) in enumerate(rows.iterrows()):
            ax.plot(range(len(rows.columns)), _values(row), marker=OURS_MARKERS[i], color=PALETTE[i], linewidth=2,
                    label=f"paper: {name} (reported)")
        ax.plot(range(len(rows.columns)), _values(baseline.iloc[0]), linestyle="--", marker="o",
                markerfacecolor="white", color=REFERENCE_COLOUR, label=f"paper: {baseline.index[0]} (reported)")
        set_categories(ax, list(rows.columns))
        ax.set_title(model)
        ax.set_xlabel("proof depth (steps)")
        ax.set_ylim(0, 100)
    axes[0, 0].set_ylabel("accuracy (%)")
    fig.suptitle("The paper's Figure 3 from Table 5: SFT variants by FLD depth")
    legend_below(fig)
    return finish(fig, alt="Line chart in two panels sharing the y axis (accuracy %, 0-100), redrawn from the "
                           "paper's Table 5: FLD accuracy by proof depth (0-3 to 16-19 steps) of the four SFT variants "
                           f"of {' and '.join(models)}, with {' '.join(reference)} dashed in each panel; all values "
                           "reported by the paper.")


# ---------------------------------------------------------------------------------------------- proof trees

@themed
def proof_tree(problem, *, width: float = PAGE_WIDTH, wrap: int = 24):
    """Draw a problem's gold proof as a layered tree (:func:`proof_layout`), facts at the bottom and the
    hypothesis on top, arrows from each premise's box to its conclusion's; ``width`` is capped at page width."""
    if not problem.proof:
        raise ValueError(f"problem {problem.id!r} has no gold proof to draw")
    width = min(width, PAGE_WIDTH)
    layout = proof_layout(problem, wrap=wrap, width=width)
    graph, boxes, bends = layout["graph"], layout["boxes"], layout["bends"]
    layers = max(b["layer"] for b in boxes.values()) + 1
    row_height = max(b["lines"] for b in boxes.values()) * 0.19 + 0.6
    fig, axes = new_figure(height=0.55 + row_height * layers, width=width)
    ax = axes[0, 0]
    ax.set_xlim(0, width)
    ax.set_ylim(0, row_height * layers)
    ax.axis("off")
    ax.set_title(f"Gold proof of {problem.id} ({problem.label}, depth {problem.depth})")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    extent = {}  # node -> (x0, y0, x1, y1) of its box in data units
    for node, box in boxes.items():
        colour = "#d8ecff" if node.startswith("fact") else "#ffe9c7" if node == "hypothesis" else "#e6f5d8"
        text = ax.text(box["x"] * width, (box["layer"] + 0.5) * row_height, box["text"], ha="center",
                       va="center", fontsize=FONT, zorder=3, color="#111111",
                       bbox={"boxstyle": "round,pad=0.3", "facecolor": colour, "edgecolor": "#555555"})
        text.draw(renderer)
        (x0, y0), (x1, y1) = ax.transData.inverted().transform(text.get_bbox_patch().get_window_extent(renderer))
        extent[node] = (x0, y0, x1, y1)
    top = {k: max(e[3] for n, e in extent.items() if boxes[n]["layer"] == k) for k in range(layers)}
    bottom = {k: min(e[1] for n, e in extent.items() if boxes[n]["layer"] == k) for k in range(layers)}
    routes = {}
    for premise, conclusion in graph.edges:
        px, cx = (extent[premise][0] + extent[premise][2]) / 2, (extent[conclusion][0] + extent[conclusion][2]) / 2
        points = [(px, extent[premise][3]), (px, top[boxes[premise]["layer"]])]
        for k, x in bends.get((premise, conclusion), []):  # a free slot in each layer the edge crosses
            points += [(x * width, bottom[k]), (x * width, top[k])]
        points += [(cx, bottom[boxes[conclusion]["layer"]]), (cx, extent[conclusion][1])]
        points = [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]
        routes[(premise, conclusion)] = points
        ax.add_patch(FancyArrowPatch(path=Path(points), arrowstyle="-|>", mutation_scale=14, color="#555555",
                                     linewidth=1.3, zorder=1))
    fig.finelogic_extents, fig.finelogic_routes = extent, routes
    edges = "; ".join(f"{p} -> {c}" for p, c in graph.edges)
    return finish(fig, alt=f"Proof tree of {problem.id} ({problem.label}, depth {problem.depth}): facts at the "
                           f"bottom, the hypothesis at the top; arrows from premises to conclusions: {edges}.")


def proof_layout(problem, *, wrap: int = 24, width: float = PAGE_WIDTH) -> dict[str, Any]:
    """A layered layout of a problem's gold proof: ``{"graph", "boxes": {node: {layer, x, text, lines}},
    "bends": {(premise, conclusion): [(layer, x), ...]}}``, x in 0..1. A node sits one layer below the first
    step that uses it; an edge crossing layers gets a free slot in each, so it never runs through a box; nodes
    are ordered under what they feed."""
    steps = parse_proof_steps(problem.proof)
    graph = nx.DiGraph()
    texts = {f.id: f.text for f in problem.facts}
    texts["hypothesis"] = problem.hypothesis
    for step in steps:
        for premise in step.premises:
            graph.add_edge(premise, step.conclusion)
        if step.text:
            texts[step.conclusion] = step.text
    height: dict[str, int] = {}  # longest path to a node nothing uses
    for node in reversed(list(nx.topological_sort(graph))):
        height[node] = 1 + max((height[s] for s in graph.successors(node)), default=-1)
    top_layer = max(height.values(), default=0)
    layer = {node: top_layer - h for node, h in height.items()}
    # The layered graph: edges crossing layers pass through one slot per layer crossed.
    layered = nx.DiGraph()
    slots: dict[int, list] = {}
    for node in graph.nodes:
        slots.setdefault(layer[node], []).append(node)
        layered.add_node(node)
    for premise, conclusion in graph.edges:
        previous = premise
        for k in range(layer[premise] + 1, layer[conclusion]):
            slot = ("bend", premise, conclusion, k)
            slots.setdefault(k, []).append(slot)
            layered.add_edge(previous, slot)
            previous = slot
        layered.add_edge(previous, conclusion)
    position: dict = {}
    for k in sorted(slots, reverse=True):  # top down: a node sits under what it feeds
        def order(n):
            above = [position[s] for s in layered.successors(n) if s in position]
            name = n if isinstance(n, str) else n[1]
            return (float(np.mean(above)) if above else 0.5, name.rstrip("0123456789"), len(name), name)
        ordered = sorted(slots[k], key=order)
        for n, x in zip(ordered, _spread([order(n)[0] for n in ordered], 1 / max(len(ordered), 2))):
            position[n] = x
    boxes, bends = {}, {}
    for node in graph.nodes:
        chars = max(8, min(wrap, int(width * 72 / (0.6 * FONT) / max(len(slots[layer[node]]), 2)) - 3))
        text = node + "\n" + textwrap.fill(texts.get(node, ""), chars)
        boxes[node] = {"layer": layer[node], "x": position[node], "text": text, "lines": text.count("\n") + 1}
    for premise, conclusion in graph.edges:
        bends[(premise, conclusion)] = [(k, position[("bend", premise, conclusion, k)])
                                        for k in range(layer[premise] + 1, layer[conclusion])]
    return {"graph": graph, "boxes": boxes, "bends": bends}


def _spread(wanted: list[float], gap: float) -> list[float]:
    """Positions in 0..1 as close to ``wanted`` (sorted) as a spacing of at least ``gap`` allows."""
    xs = [max(min(x, 1 - gap / 2), gap / 2) for x in wanted]
    for i in range(1, len(xs)):
        xs[i] = max(xs[i], xs[i - 1] + gap)
    overflow = xs[-1] - (1 - gap / 2) if xs else 0
    if overflow > 0:
        xs = [x - overflow for x in xs]
        for i in range(len(xs) - 2, -1, -1):
            xs[i] = min(xs[i], xs[i + 1] - gap)
    return xs
