"""Tables and caption lines of the accuracy (Table 2) and depth (Table 5) pages, from a run's records.

Every table shows the principled reading beside the released code's (the scorer the paper used for that
model or table, named in the table: :data:`SCORER_NAMES`), and counts the responses that were not scored:
``no answer`` (finished, no marker), ``no output`` (empty text) and ``truncated`` (cut by the token cap).
Given a forced-choice summary (:func:`finelogic.eval.forced_choice.summarize_forced`), Table 2 and Table 5
add our forced-choice accuracy with its own n, Wilson 95% interval and chance level.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from finelogic.book.tables import Table, present, with_paper
from finelogic.data.suites import PAPER_NAMES
from finelogic.eval.accuracy import COMPAT_COLUMNS, summarize

#: How the pages name the released scorers (:mod:`finelogic.eval.extraction`).
SCORER_NAMES = {"vllm_overall": "vLLM overall (eval_vllm_overall.py)", "api": "API (evaluate_api.py)",
                "depth": "depth (process_result_by_step.py)"}

#: Summary count column -> the page's column name.
COUNT_NAMES = {"no_answer": "no answer", "no_output": "no output", "truncated": "truncated"}


def table2(ours: pd.DataFrame) -> pd.DataFrame:
    """Our Table 2 rows (``summarize`` by model, setting, dataset) with the paper's value beside each
    (``—`` where it has none) and the counts of unscored responses; indexed by model, setting and the
    dataset's printed name."""
    table = with_paper(ours, "table2", metric_column="dataset", metric_names=PAPER_NAMES)
    for column, name in COUNT_NAMES.items():
        table[name] = ours[column].to_numpy()
    table["dataset"] = table["dataset"].map(PAPER_NAMES)
    return _paper_dash(table.set_index(["model", "setting", "dataset"]))


def compat_summary(records: pd.DataFrame, by: Sequence[str] = ("model", "setting", "dataset")) -> pd.DataFrame:
    """``summarize`` of each record under the released scorer the paper used for its model (the record's
    ``compat_scorer``: vLLM overall or API), with a ``scorer`` column naming it; rows in the order of
    ``summarize(records, by)``."""
    parts = [summarize(group, by, correct_column=COMPAT_COLUMNS[scorer]).assign(scorer=scorer)
             for scorer, group in records.groupby("compat_scorer", sort=False)]
    order = summarize(records, by)[list(by)]
    return order.merge(pd.concat(parts, ignore_index=True), on=list(by), how="left")


def policy_table(records: pd.DataFrame, by: Sequence[str] = ("model", "setting", "dataset")) -> pd.DataFrame:
    """The same responses read both ways, per model, setting and dataset: accuracy (%) under the
    principled policy and under the released scorer the paper used for the model (named in ``released
    scorer``), and the counts of responses neither scored."""
    ours, compat = summarize(records, by), compat_summary(records, by)
    table = ours[[*by, "n"]].copy()
    table["principled (%)"] = ours["accuracy"].round(1)
    table["released code (%)"] = compat["accuracy"].round(1).to_numpy()
    table["released scorer"] = compat["scorer"].map(SCORER_NAMES).to_numpy()
    for column, name in COUNT_NAMES.items():
        table[name] = ours[column].to_numpy()
    if "dataset" in table:
        table["dataset"] = table["dataset"].map(PAPER_NAMES)
    return table.set_index(list(by))


def table5(summary: pd.DataFrame, compat: pd.DataFrame | None = None) -> pd.DataFrame:
    """Our Table 5 rows (a depth run's ``summary``) with the paper's value beside each (``—`` where none),
    the released depth scorer's accuracy of the same responses (``compat``: the run's ``compat``, same
    rows) and the counts of unscored responses."""
    table = with_paper(summary, "table5", metric_column="depth_bucket")
    if compat is not None:
        table[f"released {SCORER_NAMES['depth']} (%)"] = compat["accuracy"].round(1).to_numpy()
    for column, name in COUNT_NAMES.items():
        table[name] = summary[column].to_numpy()
    return _paper_dash(table.set_index(["model", "setting", "depth_bucket"]))


#: The footnote of the missing mark in the paper column.
PAPER_MISSING = "the paper reports no value for this model, setting and column (our model is not in the paper)"


#: Footnote of the forced-choice columns (our addition).
FORCED_NOTE = ("Forced choice is our addition, not the paper's: after the model's own response we append "
               "\"Final answer: \" and score each label's marker by log-likelihood; the most likely one is "
               "the answer (sum of token log-probs, ties to the first label). Forced n counts the responses "
               "it scored; chance is one over the dataset's number of labels.")
#: What a missing forced-choice cell means.
FORCED_MISSING = ("in the forced-choice columns: no response of this group could be forced (a baseline, "
                  "empty replies, or a model that cannot score log-likelihoods)")
#: Page headers of the forced-choice columns.
FORCED_HEADERS = {"forced": "Forced choice (%) [95% CI]", "forced n": "Forced n", "chance": "Chance (%)"}


def _paper_view(table: pd.DataFrame, ours: pd.DataFrame, forced: pd.DataFrame | None, keys: Sequence[str], *,
                missing: str, percent: list[str], headers: dict[str, str]) -> Table:
    """A :func:`table2` / :func:`table5` frame as the page shows it: ours as ``12.3 [8.1, 17.0]`` (Wilson 95%,
    from ``ours``); with ``forced`` the forced-choice summary beside each row, matched on ``keys``, and chance."""
    table = table.reset_index().drop(columns="95% CI")
    table["ci_low"], table["ci_high"] = ours["ci_low"].to_numpy(), ours["ci_high"].to_numpy()
    intervals, note = {"ours": ("ci_low", "ci_high")}, None
    if forced is not None:
        columns = {"accuracy": "forced", "ci_low": "forced_low", "ci_high": "forced_high", "n": "forced n"}
        matched = ours[list(keys)].merge(forced[[*keys, *columns, "chance"]].rename(columns=columns), on=list(keys),
                                         how="left")
        for column in (*columns.values(), "chance"):
            table[column] = matched[column].to_numpy()
        table["forced n"] = table["forced n"].astype("Int64")
        intervals["forced"] = ("forced_low", "forced_high")
        missing = f"{missing}; {FORCED_MISSING}" if table["forced"].isna().any() else missing
        note = FORCED_NOTE
    return present(table, percent=[*percent, "chance"], intervals=intervals, missing=missing, note=note,
                   headers={"paper": "Paper (%)", "ours": "Ours (%) [95% CI]", **headers, **FORCED_HEADERS})


def table2_view(ours: pd.DataFrame, forced: pd.DataFrame | None = None) -> Table:
    """:func:`table2` as the page shows it, the counts of unscored responses beside; with ``forced`` (a
    :func:`~finelogic.eval.forced_choice.summarize_forced` frame by model, setting, dataset) our
    forced-choice accuracy, its n and interval, and chance."""
    return _paper_view(table2(ours), ours, forced, ("model", "setting", "dataset"), missing=PAPER_MISSING,
                       percent=["paper"], headers={})


def policy_view(records: pd.DataFrame) -> Table:
    """:func:`policy_table` as the page shows it."""
    return present(policy_table(records), percent=["principled (%)", "released code (%)"])


def table5_view(summary: pd.DataFrame, compat: pd.DataFrame | None = None,
                forced: pd.DataFrame | None = None) -> Table:
    """:func:`table5` as the page shows it, the released depth scorer's reading beside; with ``forced`` (a
    depth run's ``forced``) our forced-choice accuracy, its n and interval, and chance."""
    table = table5(summary, compat)
    released = [c for c in table.columns if str(c).startswith("released")]
    return _paper_view(table, summary, forced, ("model", "setting", "depth_bucket"), percent=released,
                       missing="the paper reports no value here (Table 5 has no UNKNOWN column, and our model is "
                               "not in the paper)",
                       headers={"depth_bucket": "Depth (steps)", **{c: "Released depth scorer (%)" for c in released}})


def accuracy_view(summary: pd.DataFrame) -> Table:
    """A :func:`~finelogic.eval.accuracy.summarize` frame as the pages show it: accuracy as
    ``12.3 [8.1, 17.0]`` (Wilson 95%), items, correct and unscored counts."""
    return present(summary, intervals={"accuracy": ("ci_low", "ci_high")},
                   headers={"accuracy": "Accuracy (%) [95% CI]", "depth_bucket": "Depth (steps)", **COUNT_NAMES},
                   missing="no scored item in this group")


def data_note(sets: pd.DataFrame) -> str:
    """`` Data: FLD: <source>; ...`` for a caption, then the test sets without items, if any."""
    sources = "; ".join(f"{name}: {source}" for name, source in zip(sets["paper_name"], sets["source"]))
    absent = sets.loc[~sets["present"].astype(bool), "paper_name"].tolist()
    note = f" Data: {sources}."
    return note + (f" **Not present** (no files, nothing substituted): {', '.join(absent)}." if absent else "")


def _paper_dash(table: pd.DataFrame) -> pd.DataFrame:
    return table.astype({"paper": object}).fillna({"paper": "—"})


def cue_rows(run) -> pd.DataFrame:
    """:func:`finelogic.eval.cues.cue_table` of an accuracy run's records against its own test sets."""
    from finelogic.eval.cues import cue_table

    return cue_table(run.records, [p for s in run.eval_sets for p in s.problems])


def cue_view(run) -> Table:
    """Beside each accuracy of ``run`` (an accuracy run with its test sets), what it must beat before it says
    anything about reasoning (:func:`finelogic.eval.cues.cue_table`): chance, the best constant answer, the
    negation and consequent rules, and the accuracy on PROVED/DISPROVED items apart from UNKNOWN ones."""
    table = cue_rows(run)
    table["dataset"] = [PAPER_NAMES.get(d, d) for d in table["dataset"]]
    rates = ["accuracy", "accuracy_pd", "accuracy_unknown", "chance", "best_constant", "negation_rule",
             "consequent_rule"]
    return present(table, percent=rates, intervals={"accuracy": ("ci_low", "ci_high")},
                   headers={"accuracy": "Accuracy [95% CI]", "n_pd": "n P/D", "accuracy_pd": "Acc. on P/D",
                            "n_unknown": "n UNKNOWN", "accuracy_unknown": "Acc. on UNKNOWN",
                            "best_constant": "Best constant", "best_constant_label": "its label",
                            "negation_rule": "Negation rule", "consequent_rule": "Consequent rule",
                            "reading": "Reading"},
                   missing="no such items", note="In %. Best constant: the most frequent gold label of these items "
                   "answered every time; negation rule: DISPROVED when the hypothesis has a negation word, else PROVED; "
                   "consequent rule: PROVED when a fact states the hypothesis (is it, or an implication ending in it), "
                   "DISPROVED when one states its negation, else the negation rule (FLD items only: it reads the "
                   "facts' formulas). "
                   "Reading: whether the 95% interval's lower end clears the highest of chance, best constant and rules.")
