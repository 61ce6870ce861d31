"""Display helpers of the probing page (``notebooks/05_probing.ipynb``, Table 4): tables and a figure made
from a :class:`finelogic.runs.probing.ProbingRun`, so the notebook holds no loops or chart code."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from finelogic.eval.probing import accuracy_by_steps_remaining, summarize, table4
from finelogic.eval.probing_data import TASKS, ProbeRow


def caption_params(settings: dict[str, Any]) -> dict[str, Any]:
    """The run's settings that every caption of the page names: depths, read-out, layer, NSD points."""
    depths = settings["depths"]
    return dict(depths=f"{min(depths)}-{max(depths)}", readout=settings["readouts"][0], layer=settings["layer"],
                nsd_points=settings["nsd_points"])


def table4_beside_paper(predictions: pd.DataFrame, readout: str, label: str) -> pd.DataFrame:
    """The paper's Table 4 rows, then ours (:func:`finelogic.eval.probing.table4`) labelled ``label``; index
    ``(source, model, probe / setting)``."""
    from finelogic.book.tables import paper_table

    reported = paper_table("table4")
    reported.index = pd.MultiIndex.from_tuples([("paper", m, s) for m, s in reported.index],
                                               names=["source", "model", "probe / setting"])
    ours = table4(predictions, readout)
    ours.index = pd.MultiIndex.from_tuples([(label, m, p) for m, p in ours.index],
                                           names=["source", "model", "probe / setting"])
    return pd.concat([reported, ours])


def css_curves(predictions: pd.DataFrame, readout: str) -> pd.DataFrame:
    """CSS accuracy (%) by proof steps remaining: one row per model's probe and one majority-class row
    (the same for every model, so shown once); columns from most steps remaining to 0."""
    css = predictions[(predictions["task"] == "css") & (predictions["readout"] == readout)]
    curves = {}
    for (model, probe), group in css.groupby(["model", "probe"], sort=False):
        if probe == "majority class" and any(key[1] == "majority class" for key in curves):
            continue  # it sees labels only: one row for all models
        by = accuracy_by_steps_remaining(group).set_index("steps_remaining")
        curves[(model if probe == "linear probe" else "", probe)] = by["accuracy"]
    return pd.DataFrame(curves).T.sort_index(axis=1, ascending=False)


def css_prefixes_per_curve(predictions: pd.DataFrame, readout: str) -> int:
    """Test prefixes behind each curve of :func:`css_curves`."""
    css = predictions[(predictions["task"] == "css") & (predictions["readout"] == readout)]
    return len(css) // css.groupby(["model", "probe"]).ngroups


def css_curve_figure(curves: pd.DataFrame):
    """:func:`css_curves` as lines over the steps remaining."""
    from finelogic.book import figures

    fig = figures.accuracy_by_group(curves, title="CSS probe accuracy by steps remaining",
                                    ylabel="prefixes classified correctly (%)")
    fig.axes[0].set_xlabel("proof steps remaining")
    return fig


def set_sizes(rows: Sequence[ProbeRow]) -> pd.DataFrame:
    """Problems, rows and the share of label 1 (%) per task and split; index ``(task, split)``."""
    records = []
    for task in TASKS:
        for split in ("train", "test"):
            chosen = [r for r in rows if r.task == task and r.split == split]
            records.append({"task": task.upper(), "split": split, "problems": len({r.problem_id for r in chosen}),
                            "rows": len(chosen),
                            "label 1 (%)": round(100 * sum(r.label for r in chosen) / max(len(chosen), 1), 1)})
    return pd.DataFrame(records).set_index(["task", "split"])


def proof_lengths(splits: dict[str, list[Any]]) -> pd.Series:
    """Gold proof steps per problem of every split (index: problem id)."""
    return pd.Series({p.id: p.meta["num_steps"] for problems in splits.values() for p in problems})


def row_accuracies(predictions: pd.DataFrame) -> pd.DataFrame:
    """Row accuracy (%) per model, read-out and probe (rows) and task (columns ``CSS rows (%)``, ...)."""
    table = summarize(predictions).pivot_table(index=["model", "readout", "probe"], columns="task",
                                               values="row_accuracy", sort=False)[list(TASKS)].round(1)
    table.columns = [c.upper() + " rows (%)" for c in table.columns]
    return table


def seconds_text(seconds: dict[str, float]) -> str:
    """One sentence with each model's time for features and probes."""
    per_model = ", ".join(f"{m}: {s:.0f} s" for m, s in seconds.items())
    return f"Time for features and probes (cached features load in well under a second): {per_model}."


def examples_text(rows: Sequence[ProbeRow]) -> str:
    """Markdown: one test row per task (CSS: its first prefix), the end of its prefix and its suffix."""
    examples = []
    for task in TASKS:
        row = next(r for r in rows if r.task == task and r.split == "test" and (task != "css" or r.step == 1))
        examples.append(f"**{task.upper()}** (label {row.label}, step {row.step} of {row.n_steps}): "
                        f"…`{row.prefix[-80:]!r}` + `{row.suffix!r}`")
    return "\n\n".join(examples)
