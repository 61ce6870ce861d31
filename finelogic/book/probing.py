"""Display helpers of the probing page (``notebooks/05_probing.ipynb``, Table 4), made from a
:class:`finelogic.runs.probing.ProbingRun`."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from finelogic.book import figures
from finelogic.book.display import without_control_tokens
from finelogic.book.tables import interval, paper_table
from finelogic.eval.probing import LINEAR, accuracy_by_steps_remaining, shared_once, summarize, table4
from finelogic.eval.probing_data import TASKS, ProbeRow, row_counts, shown_rows


def caption_params(settings: dict[str, Any]) -> dict[str, Any]:
    """The run's settings that every caption of the page names: depths, read-out, layer, NSD points."""
    depths = settings["depths"]
    return dict(depths=f"{min(depths)}-{max(depths)}", readout=settings["readouts"][0], layer=settings["layer"],
                nsd_points=settings["nsd_points"])


def table4_beside_paper(predictions: pd.DataFrame, readout: str, label: str) -> pd.DataFrame:
    """The paper's Table 4 rows, then ours (:func:`finelogic.eval.probing.table4`) labelled ``label``; index
    ``(source, model, probe / setting)``."""
    both = pd.concat({"paper": paper_table("table4"), label: table4(predictions, readout)})
    return both.rename_axis(["source", "model", "probe / setting"])


def css_curves(predictions: pd.DataFrame, readout: str) -> pd.DataFrame:
    """CSS accuracy (%) by proof steps remaining: one row per model's probe, one majority-class and one
    text-only row (the same for every model, so shown once); columns from most steps remaining to 0."""
    css = predictions[(predictions["task"] == "css") & (predictions["readout"] == readout)]
    curves = {}
    for (model, probe), group in css.groupby(["model", "probe"], sort=False):
        if probe != LINEAR and any(key[1] == probe for key in curves):
            continue  # baselines see labels / the line only: one row for all models
        by = accuracy_by_steps_remaining(group).set_index("steps_remaining")
        curves[(model if probe == LINEAR else "", probe)] = by["accuracy"]
    return pd.DataFrame(curves).T.sort_index(axis=1, ascending=False)


def css_prefixes_per_curve(predictions: pd.DataFrame, readout: str) -> int:
    """Test prefixes behind each curve of :func:`css_curves`."""
    css = predictions[(predictions["task"] == "css") & (predictions["readout"] == readout)]
    return len(css) // css.groupby(["model", "probe"]).ngroups


def css_curve_figure(curves: pd.DataFrame):
    """:func:`css_curves` as lines over the steps remaining (ours only: the paper reports no such curve)."""
    return figures.accuracy_by_group(curves, title="CSS probe accuracy by proof steps remaining (this run)",
                                     ylabel="prefixes classified correctly (%)", xlabel="proof steps remaining")


def table4_figure(predictions: pd.DataFrame, readout: str):
    """Table 4 as a dot plot: the paper's rows (hollow grey) above ours (each model's linear probe, the
    majority-class and text-only rows), one panel per task; CSS in steps, RFI and NSD in %."""
    ours = table4(predictions, readout)
    return figures.paper_vs_ours(ours, paper_table("table4")[list(ours.columns)], shared_x=False,
                                 xlabels={"CSS": "steps (mean correctness span)", "RFI": "% of test problems",
                                          "NSD": "% of test problems"},
                                 title="Table 4: the paper's probes and ours")


def set_sizes(rows: Sequence[ProbeRow] | pd.DataFrame) -> pd.DataFrame:
    """Problems, rows and the share of label 1 (%) per task and split (a run's ``row_counts``, or the counts
    of ``rows``); index ``(task, split)``."""
    counts = rows if isinstance(rows, pd.DataFrame) else row_counts(rows)
    return counts.set_index(["task", "split"])


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
    """Markdown: one test row per task (CSS: its first prefix), the end of its prefix and its suffix
    (``rows``: a run's ``shown_rows``, or all rows)."""
    return "\n\n".join(f"**{row.task.upper()}** (label {row.label}, step {row.step} of {row.n_steps}): "
                       f"…`{without_control_tokens(row.prefix)[-80:]!r}` + `{without_control_tokens(row.suffix)!r}`"
                       for row in shown_rows(rows))


def table4_with_cis(summary: pd.DataFrame, readout: str) -> pd.DataFrame:
    """Our Table 4 with its bootstrap 95% CIs over test problems: per model's linear probe, then the
    majority-class and text-only rows once; columns per task ``CSS (steps)``, ``RFI (%)``, ``NSD (%)`` and
    their row accuracies, each cell ``value [low, high]``."""
    chosen = shared_once(summary[summary["readout"] == readout])
    table = {}
    for (model, probe), group in chosen.groupby(["model", "probe"], sort=False):
        by = group.set_index("task")
        tasks = [task for task in TASKS if task in by.index]
        units = {t: "steps" if t == "css" else "%" for t in tasks}
        cells = {f"{t.upper()} ({units[t]})": interval(*by.loc[t, ["metric", "ci_low", "ci_high"]]) for t in tasks}
        cells.update({f"{t.upper()} rows (%)": interval(*by.loc[t, ["row_accuracy", "row_ci_low", "row_ci_high"]])
                      for t in tasks})
        table[(model, probe)] = cells
    return pd.DataFrame(table).T.rename_axis(["model", "probe"])
