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


def accuracy_bars(summary: pd.DataFrame, *, names: dict[str, str] | None = None,
                  title: str = "Our accuracy by dataset (95% Wilson intervals)"):
    """Grouped bars with 95% interval whiskers: one group per dataset, one bar per (model, setting).

    Args:
        summary: :func:`finelogic.eval.accuracy.summarize` by ``("model", "setting", "dataset")``
            (``accuracy``, ``ci_low``, ``ci_high`` in %).
        names: dataset key -> printed name for the x axis (e.g. ``PAPER_NAMES``).
    """
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 4))
    groups = list(dict.fromkeys(summary["dataset"]))
    series = list(dict.fromkeys(zip(summary["model"], summary["setting"])))
    width = 0.8 / max(len(series), 1)
    for i, (model, setting) in enumerate(series):
        rows = summary[(summary.model == model) & (summary.setting == setting)].set_index("dataset").reindex(groups)
        x = np.arange(len(groups)) + (i - (len(series) - 1) / 2) * width
        ax.bar(x, rows["accuracy"], width, label=f"{model} / {setting}")
        ax.errorbar(x, rows["accuracy"], yerr=[rows["accuracy"] - rows["ci_low"], rows["ci_high"] - rows["accuracy"]],
                    fmt="none", ecolor="black", capsize=3, linewidth=1)
    ax.set_xticks(range(len(groups)), [(names or {}).get(g, g) for g in groups])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def accuracy_by_depth(curves: pd.DataFrame, reported: pd.DataFrame, *,
                      title: str = "FLD accuracy by proof depth: ours (solid) and the paper's Direct rows (dashed)"):
    """Our accuracy by FLD depth bucket (one line per row of ``curves``, columns = buckets) beside the
    paper's Direct rows of ``reported`` (Table 5, index ``(model, setting)``), dashed."""
    reference = reported.loc[[i for i in reported.index if i[1] == "Direct"], list(curves.columns)]
    return accuracy_by_group(curves, reference=reference, title=title)


def paper_figure3(reported: pd.DataFrame, *, models=("Llama-3.1-8B-Instruct", "Qwen-2.5-7B-Instruct"),
                  reference=("GPT-4o", "Direct")):
    """The paper's Figure 3, redrawn from its Table 5 (``reported``, index ``(model, setting)``): one panel
    per base model with its SFT rows, the ``reference`` row (GPT-4o, Direct) dashed in each."""
    fig, axes = plt.subplots(1, len(models), figsize=(11, 4.2), sharey=True)
    baseline = reported.loc[[reference]].droplevel("model").rename(index={reference[1]: " ".join(reference)})
    for ax, model in zip(axes, models):
        rows = reported.loc[[i for i in reported.index if i[0] == model and i[1].startswith("SFT")]]
        accuracy_by_group(rows.droplevel("model"), reference=baseline,
                          title=f"{model}: SFT variants by FLD depth (paper)", ax=ax)
    return fig


def _label(label) -> str:
    return " / ".join(str(part) for part in label if str(part)) if isinstance(label, tuple) else str(label)


def proof_tree(problem, *, width: float = 8.0, wrap: int = 26):
    """Draw a problem's gold proof as a tree: facts at the bottom, the hypothesis at the top.

    Nodes are the ids the proof cites (``fact3``, ``int1``, ``hypothesis``) with their sentences; an edge
    runs from each premise to the conclusion of its step. Level = rule applications below the node.
    """
    import textwrap

    import networkx as nx

    from finelogic.logic.proof import parse_proof_steps

    if not problem.proof:
        raise ValueError(f"problem {problem.id!r} has no gold proof to draw")
    steps = parse_proof_steps(problem.proof)
    graph = nx.DiGraph()
    texts = {f.id: f.text for f in problem.facts}
    texts["hypothesis"] = problem.hypothesis
    for step in steps:
        for premise in step.premises:
            graph.add_edge(premise, step.conclusion)
        if step.text:
            texts[step.conclusion] = step.text
    level = {}
    for node in nx.topological_sort(graph):
        parents = list(graph.predecessors(node))
        level[node] = 1 + max(level[p] for p in parents) if parents else 0
    by_level: dict[int, list[str]] = {}
    for node in graph.nodes:
        by_level.setdefault(level[node], []).append(node)
    positions = {}
    for y, nodes in by_level.items():
        for i, node in enumerate(sorted(nodes, key=lambda n: (n.rstrip("0123456789"), len(n), n))):
            positions[node] = ((i + 1) / (len(nodes) + 1), y)
    height = max(level.values(), default=0) + 1
    fig, ax = plt.subplots(figsize=(width, 1.0 + 1.1 * height))
    nx.draw_networkx_edges(graph, positions, ax=ax, arrows=True, arrowstyle="-|>", arrowsize=12,
                           edge_color="#888888", node_size=2600)
    for node, (x, y) in positions.items():
        colour = "#d8ecff" if node.startswith("fact") else "#ffe9c7" if node == "hypothesis" else "#e6f5d8"
        label = node + "\n" + textwrap.fill(texts.get(node, ""), wrap)
        ax.text(x, y, label, ha="center", va="center", fontsize=8,
                bbox={"boxstyle": "round,pad=0.35", "facecolor": colour, "edgecolor": "#555555"})
    ax.set_ylim(-0.6, height - 0.4)
    ax.set_xlim(0, 1)
    ax.axis("off")
    ax.set_title(f"Gold proof of {problem.id} ({problem.label}, depth {problem.depth})", fontsize=9)
    fig.tight_layout()
    return fig
