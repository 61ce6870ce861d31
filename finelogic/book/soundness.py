"""The soundness page's tables and views (paper §3.2, Table 3), made from a
:class:`finelogic.runs.soundness.SoundnessRun`: Table 3 beside the paper's, the excluded samples, the
depth buckets, a response step by step, the judge-quality table."""
from __future__ import annotations

import html
from typing import Any

import pandas as pd
from IPython.display import HTML, Markdown

from finelogic.book.provenance import caption
from finelogic.book.step_view import step_view_html
from finelogic.book.tables import paper_table
from finelogic.eval.soundness import soundness_table, table3_percent

RATE_COLUMNS = ("valid_rate", "relevant_rate", "atomic_rate")
COUNT_COLUMNS = ("model", "setting", "samples", "scored", "no_steps", "undecided", "steps", "undecided_steps",
                 *RATE_COLUMNS)


def response_models(run) -> str:
    """The models whose responses were judged, comma-separated (``none`` without responses)."""
    return ", ".join(sorted(run.steps["model"].unique())) if not run.steps.empty else "none"


def n_responses(run) -> int:
    return int(run.steps["sample"].nunique()) if not run.steps.empty else 0


def run_caption(notebook: str, run, **parameters: Any) -> str:
    """The page's usual caption: models, responses, judge, the run's soundness policy."""
    prov = run.provenance
    return caption(notebook, prov.profile, prov.seed, model=response_models(run), n=n_responses(run),
                   judge=run.judge, policy=run.policy, **parameters)


def policy_note(run) -> str:
    """One sentence saying how this run read, counted and judged the steps."""
    if run.policy == "paper_code_compat":
        return ("Policy `paper_code_compat`: the steps are read, counted and judged as the released "
                "`src/eval_step.py` does (a response without steps is one step judged against `???`, "
                "steps concluding an assumption are skipped, a step is relevant when a later step cites "
                "its conclusion, an unreadable judgement counts as false, nothing is excluded); the premises "
                "are shown to the judge in sorted order, where the released code used set order.")
    return ("Policy `principled`: relevance propagates back from the step that concludes the hypothesis; "
            "samples with no step or a step the judge could not decide are excluded and counted. The "
            "column `all_relevant (paper_code_compat)` applies the released code's relevance rule to "
            "these same steps; run with `policy=\"paper_code_compat\"` for the released code's whole reading.")


def model_and_gold(run, *, policy: str | None = None, by=("model", "setting")) -> pd.DataFrame:
    """:func:`~finelogic.eval.soundness.soundness_table` rows of the responses, then of the gold proofs
    (``policy`` None: the run's)."""
    policy = policy or run.policy
    return pd.concat([soundness_table(run.steps, policy=policy, by=by),
                      soundness_table(run.gold_steps, policy=policy, by=by)], ignore_index=True)


def table3_side_by_side(run) -> pd.DataFrame:
    """Table 3 as the paper printed it over ours (:func:`~finelogic.eval.soundness.table3_percent`; a
    principled run adds the released relevance rule's all-relevant column), indexed by ``source``."""
    compat = model_and_gold(run, policy="paper_code_compat") if run.policy == "principled" else None
    ours = table3_percent(model_and_gold(run), compat=compat)
    return pd.concat({"paper": paper_table("table3"), "ours": ours}, names=["source"])


def exclusions(run) -> pd.DataFrame:
    """Samples scored and excluded per model and setting, and the step-level rates in % (one decimal)."""
    counts = model_and_gold(run)[list(COUNT_COLUMNS)].set_index(["model", "setting"])
    for column in RATE_COLUMNS:
        counts[column] = (100 * counts[column]).round(1)
    return counts


def scored_share(run) -> str:
    """``"<scored> of <samples>"`` model responses, or a sentence saying there were none."""
    ours = soundness_table(run.steps, policy=run.policy)
    n_samples = int(ours["samples"].sum())
    return f"{int(ours['scored'].sum())} of {n_samples}" if n_samples else "none (no model responses in this run)"


def by_depth(run) -> pd.DataFrame:
    """Table 3's metrics per FLD depth bucket, responses then gold proofs."""
    by = ("model", "setting", "depth_bucket")
    return table3_percent(model_and_gold(run, by=by), index=by)


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


def judge_quality_table(run) -> pd.DataFrame:
    """The judges' scores, indexed by judge and criterion."""
    return run.quality.set_index(["judge", "criterion"])


def symbolic_accuracy(run) -> str:
    """The symbolic judge's validity accuracy on the labelled set, in % with one decimal."""
    return f"{100 * judge_quality_table(run).loc[('symbolic', 'valid'), 'accuracy']:.1f}%"


def quality_caption(notebook: str, run) -> str:
    """The judge-quality tables' caption: labelled steps, their problems, the LLM judge and its sample."""
    prov = run.provenance
    return caption(notebook, prov.profile, prov.seed, n=len(run.items),
                   problems=len({i.problem.id for i in run.items}), llm_judge=prov.settings.get("llm_judge"),
                   llm_steps=prov.settings.get("llm_quality_steps"))
