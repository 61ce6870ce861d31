"""The soundness page's tables and views (paper §3.2, Table 3), made from a
:class:`finelogic.runs.soundness.SoundnessRun`."""
from __future__ import annotations

import html
from typing import Any

import pandas as pd
from IPython.display import HTML, Markdown

from finelogic.book import figures
from finelogic.book.provenance import caption
from finelogic.book.step_view import step_view_html
from finelogic.book.tables import Table, human, paper_table, present
from finelogic.eval.soundness import METRICS, soundness_table, table3_percent

RATE_COLUMNS = ("valid_rate", "relevant_rate", "atomic_rate")


def run_caption(notebook: str, run) -> str:
    """The page's usual caption: models, responses, judge, the run's soundness policy."""
    prov, steps = run.provenance, run.steps
    models = ", ".join(sorted(steps["model"].unique())) if not steps.empty else "none"
    n = int(steps["sample"].nunique()) if not steps.empty else 0
    return caption(notebook, prov.profile, prov.seed, model=models, n=n, judge=run.judge, policy=run.policy)


def policy_note(run) -> str:
    """One sentence saying how this run read, counted and judged the steps."""
    if run.policy == "released":
        return ("Policy `released`: the steps are read, counted and judged as the released "
                "`src/eval_step.py` does (a response without steps is one step judged against `???`, "
                "steps concluding an assumption are skipped, a step is relevant when a later step cites "
                "its conclusion, an unreadable judgement counts as false, nothing is excluded); the premises "
                "are shown to the judge in sorted order, where the released code used set order.")
    return ("Policy `principled`: relevance propagates back from the step that concludes the hypothesis; "
            "samples with no step or a step the judge could not decide are excluded and counted. The "
            "column *Released rule* (all relevant under the released rule) applies the released code's relevance rule to "
            "these same steps; run with `policy=\"released\"` for the released code's whole reading.")


def model_and_gold(run, *, policy: str | None = None, by=("model", "setting")) -> pd.DataFrame:
    """:func:`~finelogic.eval.soundness.soundness_table` rows of the responses, then of the gold proofs
    (``policy`` None: the run's)."""
    policy = policy or run.policy
    return pd.concat([soundness_table(run.steps, policy=policy, by=by),
                      soundness_table(run.gold_steps, policy=policy, by=by)], ignore_index=True)


def _released_rule(run) -> pd.DataFrame | None:
    """A principled run's rows read by the released code (for its all-relevant column); None otherwise."""
    return model_and_gold(run, policy="released") if run.policy == "principled" else None


def table3_side_by_side(run) -> pd.DataFrame:
    """Table 3 as the paper printed it over ours (:func:`~finelogic.eval.soundness.table3_percent`; a
    principled run adds the released relevance rule's all-relevant column), indexed by ``source``."""
    ours = table3_percent(model_and_gold(run), by_released_rule=_released_rule(run))
    return pd.concat({"paper": paper_table("table3"), "ours": ours}, names=["source"])


#: Table 3's metrics as the pages head them.
METRIC_HEADERS = {"all_valid": "All valid (%)", "all_relevant": "All relevant (%)", "all_atomic": "All atomic (%)",
                  "all_relevant_released": "Released rule (%)", "depth_bucket": "Depth", "scored / samples": "Scored / n"}
#: Why a Table 3 cell shows the missing mark.
METRIC_MISSING = ("no value: the paper reports no interval or sample count, the released-rule column is ours "
                  "only, or no sample of the row could be scored")


def metric_rows(table: pd.DataFrame, index=("model", "setting"), by_released_rule: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`~finelogic.eval.soundness.soundness_table` rows as Table 3's numbers: each metric and its
    Wilson 95% bounds in %, ``by_released_rule``'s all-relevant (the released rule) if given, ``scored / samples``."""
    out = table[list(index)].copy()
    for metric in METRICS:
        for suffix in ("", "_low", "_high"):
            out[metric + suffix] = 100 * table[metric + suffix].astype(float)
    if by_released_rule is not None:
        out["all_relevant_released"] = 100 * by_released_rule["all_relevant"].astype(float).to_numpy()
    out["scored / samples"] = [f"{s} / {n}" for s, n in zip(table["scored"], table["samples"])]
    return out


def metric_view(rows: pd.DataFrame, missing: str = METRIC_MISSING) -> Table:
    """:func:`metric_rows` (optionally with the paper's rows above) in the book's table style, narrowed to fit
    the page (:func:`_rows_named`)."""
    rows, note = _rows_named(rows)
    shown = present(rows, intervals={m: (f"{m}_low", f"{m}_high") for m in METRICS}, percent=["all_relevant_released"],
                    headers=METRIC_HEADERS, missing=missing)
    return Table(shown.frame, (*shown.notes, *([note] if note else [])), shown.numeric)


#: The gold proofs' row as :func:`model_and_gold` names its model.
GOLD = "gold proofs (sanity check)"


def _rows_named(rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``rows`` with its ``model`` column folded into ``setting`` (``gold proofs`` for the gold row) when only
    one model answered, so a table of one model's rows fits the page; and the note naming that model."""
    answered = [m for m in rows["model"].unique() if m != GOLD]
    if "source" in rows or len(answered) != 1:
        return rows, ""
    rows = rows.copy()
    rows["setting"] = ["gold proofs" if m == GOLD else s for m, s in zip(rows["model"], rows["setting"])]
    return rows.drop(columns="model"), f"Model: {answered[0]}; gold proofs: the sanity check of the pipeline."


def table3_view(run, *, with_paper: bool = True) -> Table:
    """Table 3 as the paper printed it, then ours (Wilson 95% intervals), in one table with a ``source``
    column (``with_paper=False``: ours alone); a principled run adds the released relevance rule's
    all-relevant column."""
    ours = metric_rows(model_and_gold(run), by_released_rule=_released_rule(run))
    if not with_paper:
        return metric_view(ours)
    paper = paper_table("table3").reset_index().assign(source="paper")
    rows = pd.concat([paper, ours.assign(source="ours")], ignore_index=True)
    return metric_view(rows[["source", *[c for c in rows.columns if c != "source"]]])


def table3_figure(run):
    """Table 3 as a dot plot (:func:`finelogic.book.figures.paper_vs_ours`): the paper's rows (GPT-4.1-mini
    judge) above ours (symbolic judge), one panel per metric."""
    rows = metric_rows(model_and_gold(run))
    labels = [f"{m} / {s}" for m, s in zip(rows["model"], rows["setting"])]
    ours, low, high = (rows[[m + suffix for m in METRICS]].set_axis(list(METRICS), axis=1).set_axis(labels)
                       for suffix in ("", "_low", "_high"))
    return figures.paper_vs_ours(ours, paper_table("table3")[list(METRICS)], low=low, high=high,
                                 xlabels="% of samples",
                                 title="Stepwise soundness: the paper's rows (GPT-4.1-mini judge) and ours "
                                       "(symbolic judge)")


def by_depth_view(run) -> Table:
    """Table 3's metrics per FLD depth bucket, responses then gold proofs, in the book's table style."""
    return metric_view(metric_rows(model_and_gold(run, by=("model", "setting", "depth_bucket")),
                                   index=("model", "setting", "depth_bucket")))


def exclusions_view(run) -> Table:
    """Samples scored and excluded per model and setting, and the step-level rates in % (one decimal)."""
    columns = ["model", "setting", "samples", "scored", "no_steps", "undecided", "steps", "undecided_steps"]
    counts = model_and_gold(run)[[*columns, *RATE_COLUMNS]]
    counts[list(RATE_COLUMNS)] = 100 * counts[list(RATE_COLUMNS)]
    counts["steps"] = [f"{int(a)} ({int(u)})" for a, u in zip(counts["steps"], counts.pop("undecided_steps"))]
    counts, note = _rows_named(counts)
    shown = present(counts, percent=list(RATE_COLUMNS),
                    headers={"no_steps": "No steps", "undecided": "Undecided", "steps": "Steps",
                             "valid_rate": "Valid steps", "relevant_rate": "Relevant steps",
                             "atomic_rate": "Atomic steps"},
                    missing="no step of this kind to rate")
    return Table(shown.frame, (*shown.notes, "Samples: responses; undecided: with a step the judge could not "
                               "read; steps: all, the undecided ones in brackets; step rates in %.", *([note] if note else [])), shown.numeric)


def quality_view(run) -> Table:
    """The judges' scores per judge and criterion: shares in % with one decimal, counts as counts."""
    table = run.quality.set_index(["judge", "criterion"]).reset_index()  # those two first, a copy
    shares = [c for c in table.columns if c not in ("judge", "criterion") and table[c].dtype.kind == "f"
              and table[c].dropna().between(0, 1).all()]
    table[shares] = 100 * table[shares]
    return present(table, percent=shares, headers={c: f"{human(c)} (%)" for c in shares},
                   missing="not measured: the judge decided no step of this kind")


def labels_view(run) -> Table:
    """The labelled step set by kind, in the book's table style."""
    return present(run.labels.assign(kind=run.labels["kind"].str.replace("_", " ")), missing="no step of this kind")


def scored_share(run) -> str:
    """``"<scored> of <samples>"`` model responses, or a sentence saying there were none."""
    ours = soundness_table(run.steps, policy=run.policy)
    n_samples = int(ours["samples"].sum())
    return f"{int(ours['scored'].sum())} of {n_samples}" if n_samples else "none (no model responses in this run)"


def teaching_example(run, notebook: str) -> list[Any]:
    """The teaching example's facts and hypothesis, its steps coloured by verdict, and its caption."""
    problem = run.example_problem
    facts = "<br>".join(html.escape(f"{f.id}: {f.text}") for f in problem.facts)
    return [HTML(f"<p><em>Facts:</em><br>{facts}<br><em>Hypothesis:</em> {html.escape(problem.hypothesis)}</p>"),
            HTML(step_view_html(run.example, title=f"Teaching example ({problem.id}, gold proof altered)")),
            Markdown(caption(notebook, run.provenance.profile, run.provenance.seed, judge="symbolic",
                             policy=run.policy, n=1))]


def one_response(run, notebook: str) -> list[Any]:
    """The response with the most readable steps (ties: the first), step by step, and its caption; a
    sentence when the run has no model responses."""
    if run.steps.empty:
        return [Markdown("No model responses in this run.")]
    sample = int(run.steps.groupby("sample")["parsed"].sum().idxmax())
    one = run.steps[run.steps["sample"] == sample]
    head = one.iloc[0]
    prov = run.provenance
    return [HTML(step_view_html(one, title=f"{head['model']}, {head['setting']}, {head['id']}")),
            Markdown(caption(notebook, prov.profile, prov.seed, model=head["model"], judge=run.judge,
                             policy=run.policy, n=1))]


def symbolic_accuracy(run) -> str:
    """The symbolic judge's validity accuracy on the labelled set, in % with one decimal."""
    return f"{100 * run.quality.set_index(['judge', 'criterion']).loc[('symbolic', 'valid'), 'accuracy']:.1f}%"


def quality_caption(notebook: str, run) -> str:
    """The judge-quality tables' caption: labelled steps, their problems, the LLM judge and its sample."""
    prov = run.provenance
    return caption(notebook, prov.profile, prov.seed, n=len(run.items),
                   problems=len({i.problem.id for i in run.items}), llm_judge=prov.settings.get("llm_judge"),
                   llm_steps=prov.settings.get("llm_quality_steps"))
