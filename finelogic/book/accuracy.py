"""Tables of the accuracy (Table 2) and depth (Table 5) pages: the principled reading beside the released
scorer's (:data:`SCORER_NAMES`), the counts of unscored responses (``no answer``: finished, no marker; ``no
output``: empty text; ``truncated``: cut by the token cap) and, where given, our forced-choice accuracy.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from finelogic.book.tables import Table, present
from finelogic.data.suites import PAPER_NAMES
from finelogic.eval.cues import BEATS, cue_table
from finelogic.eval.accuracy import RELEASED_COLUMNS, summarize
from finelogic.eval.stats import one_decimal
from finelogic.paper import reported

#: How the pages name the released scorers (:mod:`finelogic.eval.extraction`).
SCORER_NAMES = {"vllm_overall": "vLLM overall (eval_vllm_overall.py)", "api": "API (evaluate_api.py)",
                "depth": "depth (process_result_by_step.py)"}

#: Summary count column -> the page's column name.
COUNT_NAMES = {"no_answer": "no answer", "no_output": "no output", "truncated": "truncated"}


def _beside_paper(ours: pd.DataFrame, paper_name: str, metric_column: str,
                  metric_names: dict[str, str] | None = None) -> pd.DataFrame:
    """``ours`` (a :func:`~finelogic.eval.accuracy.summarize` frame) as ``model, setting, <metric_column>,
    paper, ours, 95% CI, n`` (numbers in %, the CI as text), the paper's reported value matched through
    ``metric_names`` (our metric values -> the paper's) and NaN where it has none."""
    paper = reported(paper_name).rename(columns={"value": "paper"})
    table = ours.copy()
    table["metric"] = table[metric_column].map(lambda m: (metric_names or {}).get(m, m))
    table = table.merge(paper, on=["model", "setting", "metric"], how="left")
    table["ours"] = [float(one_decimal(v)) for v in table["accuracy"]]  # halves up, as every page prints them
    table["95% CI"] = [f"{one_decimal(lo)}–{one_decimal(hi)}" for lo, hi in zip(table["ci_low"], table["ci_high"])]
    return table[["model", "setting", metric_column, "paper", "ours", "95% CI", "n"]]


def _with_counts(table: pd.DataFrame, ours: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    """``table`` with ``ours``' counts of unscored responses, indexed by ``index``, ``—`` where the paper has
    no value."""
    for column, name in COUNT_NAMES.items():
        table[name] = ours[column].to_numpy()
    return table.set_index(index).astype({"paper": object}).fillna({"paper": "—"})


def table2(ours: pd.DataFrame) -> pd.DataFrame:
    """Our Table 2 rows (``summarize`` by model, setting, dataset) beside the paper's, with the counts of
    unscored responses; indexed by model, setting and the dataset's printed name."""
    table = _beside_paper(ours, "table2", "dataset", PAPER_NAMES)
    table["dataset"] = table["dataset"].map(PAPER_NAMES)
    return _with_counts(table, ours, ["model", "setting", "dataset"])


def policy_table(records: pd.DataFrame, by: Sequence[str] = ("model", "setting", "dataset")) -> pd.DataFrame:
    """The same responses read both ways, per model, setting and dataset: accuracy (%) under the
    principled policy and under the released scorer the paper used for the model (the record's
    ``compat_scorer``, named in ``released scorer``), and the counts of responses neither scored."""
    ours = summarize(records, by)
    parts = [summarize(group, by, correct_column=RELEASED_COLUMNS[scorer]).assign(scorer=scorer)
             for scorer, group in records.groupby("compat_scorer", sort=False)]
    by_released = ours[list(by)].merge(pd.concat(parts, ignore_index=True), on=list(by), how="left")
    table = ours[[*by, "n"]].copy()
    table["principled (%)"] = ours["accuracy"].round(1)
    table["released code (%)"] = by_released["accuracy"].round(1).to_numpy()
    table["released scorer"] = by_released["scorer"].map(SCORER_NAMES).to_numpy()
    for column, name in COUNT_NAMES.items():
        table[name] = ours[column].to_numpy()
    if "dataset" in table:
        table["dataset"] = table["dataset"].map(PAPER_NAMES)
    return table.set_index(list(by))


def table5(summary: pd.DataFrame, by_released: pd.DataFrame | None = None) -> pd.DataFrame:
    """Our Table 5 rows (a depth run's ``summary``) beside the paper's, the released depth scorer's accuracy
    of the same responses (``by_released``: a depth run's ``compat``, same rows) and the counts of unscored responses."""
    table = _beside_paper(summary, "table5", "depth_bucket")
    if by_released is not None:
        table[f"released {SCORER_NAMES['depth']} (%)"] = [float(one_decimal(v)) for v in by_released["accuracy"]]
    return _with_counts(table, summary, ["model", "setting", "depth_bucket"])


#: Footnote of the forced-choice columns (our addition).
FORCED_NOTE = ("Forced: forced choice, our addition, not the paper's: after the model's response, \"Final answer: \" "
               "and the label marker it scores highest by log-likelihood (ties to the first label). Chance: one over "
               "the dataset's number of labels.")
#: What a missing forced-choice cell means.
FORCED_MISSING = ("in the forced-choice columns: no response of this group could be forced (a baseline, "
                  "empty replies, or a model that cannot score log-likelihoods)")
#: Page headers of the forced-choice columns.
FORCED_HEADERS = {"forced": "Forced [95% CI]", "forced n": "Forced n", "chance": "Chance"}


def _paper_view(table: pd.DataFrame, ours: pd.DataFrame, forced: pd.DataFrame | None, *, missing: str,
                percent: list[str], headers: dict[str, str]) -> Table:
    """A :func:`table2` / :func:`table5` frame as the page shows it: ours as ``12.3 [8.1, 17.0]`` (Wilson 95%,
    from ``ours``); with ``forced`` the forced-choice summary beside each row, matched on the index, and chance."""
    keys = list(table.index.names)
    table = table.reset_index().drop(columns="95% CI")
    table["ci_low"], table["ci_high"] = ours["ci_low"].to_numpy(), ours["ci_high"].to_numpy()
    intervals, note = {"ours": ("ci_low", "ci_high")}, None
    if forced is not None:
        columns = {"accuracy": "forced", "ci_low": "forced_low", "ci_high": "forced_high", "n": "forced n"}
        matched = ours[keys].merge(forced[[*keys, *columns, "chance"]].rename(columns=columns), on=keys, how="left")
        for column in (*columns.values(), "chance"):
            table[column] = matched[column].to_numpy()
        table["forced n"] = table["forced n"].astype("Int64")
        intervals["forced"] = ("forced_low", "forced_high")
        missing = f"{missing}; {FORCED_MISSING}" if table["forced"].isna().any() else missing
        note = FORCED_NOTE
    table, dropped = _narrow(table)
    shown = present(table, percent=[*percent, "chance"], intervals=intervals, missing=missing, note=note,
                    headers={"paper": "Paper", "ours": "Ours [95% CI]", **headers, **FORCED_HEADERS})
    return Table(shown.frame, (f"Accuracy in %. {dropped}".strip(), *shown.notes), shown.numeric)


def _narrow(table: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``table`` without the columns that say nothing row by row, so it fits the page: the model when there is
    one, the paper's value when it has none, a count of unscored responses that is 0 everywhere, the forced n
    when it equals n everywhere; and a sentence saying what was left out."""
    said, drop = [], []
    if table["model"].nunique() == 1:
        drop.append("model")
        said.append(f"Model: {table['model'].iloc[0]}")
    if "paper" in table and table["paper"].map(lambda v: v == "—" or pd.isna(v)).all():
        drop.append("paper")
        said.append("the paper reports no row for this model")
    zero = [name for name in COUNT_NAMES.values() if name in table and (table[name].fillna(0) == 0).all()]
    drop += zero
    if zero:
        said.append(f"{' and '.join(zero)}: 0 in every row")
    if "n" in table and table["n"].nunique() == 1 and len(table) > 1:
        drop.append("n")
        said.append(f"n = {int(table['n'].iloc[0])} in every row")
    if "forced n" in table and (table["forced n"].astype("Float64") == table["n"].astype("Float64")).all():
        drop.append("forced n")
        said.append("forced choice scored every response")
    if "chance" in table:
        key = "dataset" if "dataset" in table else None
        levels = (table.groupby(key, sort=False)["chance"].agg(["min", "max"]) if key
                  else pd.DataFrame({"min": [table["chance"].min()], "max": [table["chance"].max()]}, index=["all"]))
        if table["chance"].notna().all() and (levels["min"] == levels["max"]).all():
            drop.append("chance")
            said.append("chance: " + ", ".join(f"{level:.1f}%" + (f" on {name}" if key else "")
                                               for name, level in levels["min"].items()))
    if not said:
        return table, ""
    return table.drop(columns=drop), "; ".join(said) + "."


def table2_view(ours: pd.DataFrame, forced: pd.DataFrame | None = None) -> Table:
    """:func:`table2` as the page shows it, the counts of unscored responses beside; with ``forced`` (a
    :func:`~finelogic.eval.forced_choice.summarize_forced` frame by model, setting, dataset) our
    forced-choice accuracy, its n and interval, and chance."""
    return _paper_view(table2(ours), ours, forced, percent=["paper"], headers={},
                       missing="the paper reports no value for this model, setting and column (our model is not in "
                               "the paper)")


def policy_view(records: pd.DataFrame) -> Table:
    """:func:`policy_table` as the page shows it (a single model and all-zero counts in the note)."""
    table = policy_table(records).reset_index()
    table["paper"] = "—"
    table, dropped = _narrow(table)
    shown = present(table.drop(columns="paper", errors="ignore"), percent=["principled (%)", "released code (%)"])
    said = dropped.replace("the paper reports no row for this model; ", "").replace("; the paper reports no row for this model", "")
    return Table(shown.frame, (*shown.notes, *([said] if said else [])), shown.numeric)


def table5_view(summary: pd.DataFrame, by_released: pd.DataFrame | None = None,
                forced: pd.DataFrame | None = None) -> Table:
    """:func:`table5` as the page shows it, the released depth scorer's reading beside; with ``forced`` (a
    depth run's ``forced``) our forced-choice accuracy, its n and interval, and chance."""
    table = table5(summary, by_released)
    released = [c for c in table.columns if str(c).startswith("released")]
    return _paper_view(table, summary, forced, percent=released,
                       missing="the paper reports no value here (Table 5 has no UNKNOWN column, and our model is "
                               "not in the paper)",
                       headers={"depth_bucket": "Depth", **{c: "Released scorer" for c in released}})


def accuracy_view(summary: pd.DataFrame) -> Table:
    """A :func:`~finelogic.eval.accuracy.summarize` frame as the pages show it: accuracy as
    ``12.3 [8.1, 17.0]`` (Wilson 95%), items, correct and unscored counts."""
    summary, notes = summary.drop(columns=["correct"], errors="ignore"), []
    if "model" in summary and summary["model"].nunique() == 1:
        notes.append(f"Model: {summary['model'].iloc[0]}.")
        summary = summary.drop(columns="model")
    zero = [c for c in COUNT_NAMES if c in summary and (summary[c].fillna(0) == 0).all()]
    if zero:
        notes.append(f"{' and '.join(COUNT_NAMES[c] for c in zero)}: 0 in every row.")
    shown = present(summary.drop(columns=zero), intervals={"accuracy": ("ci_low", "ci_high")},
                    headers={"accuracy": "Accuracy [95% CI]", "depth_bucket": "Depth", **COUNT_NAMES},
                    missing="no scored item in this group")
    return Table(shown.frame, (*shown.notes, *notes), shown.numeric)


def data_note(sets: pd.DataFrame) -> str:
    """`` Data: FLD: <source>; ...`` for a caption, then the test sets without items, if any."""
    sources = "; ".join(f"{name}: {source}" for name, source in zip(sets["paper_name"], sets["source"]))
    absent = sets.loc[~sets["present"].astype(bool), "paper_name"].tolist()
    note = f" Data: {sources}."
    return note + (f" **Not present** (no files, nothing substituted): {', '.join(absent)}." if absent else "")


def cue_rows(run) -> pd.DataFrame:
    """:func:`finelogic.eval.cues.cue_table` of an accuracy run's records against its own test sets."""
    return cue_table(run.records, [p for s in run.eval_sets for p in s.problems])


def cue_view(run) -> Table:
    """Beside each accuracy of ``run`` (an accuracy run with its test sets), what it must beat before it says
    anything about reasoning (:func:`finelogic.eval.cues.cue_table`): chance, the best constant answer, the
    negation and consequent rules, and whether the interval's lower end clears them all (the model column only
    when the run holds several models; the accuracies apart on PROVED/DISPROVED and UNKNOWN items stay in
    :func:`cue_rows`)."""
    table = cue_rows(run)
    table["dataset"] = [PAPER_NAMES.get(d, d) for d in table["dataset"]]
    table["reading"] = ["above all" if r == BEATS else "≤ " + r.removeprefix("not above ").removeprefix("the ")
                        .removesuffix(" answer") for r in table["reading"]]
    chance = dict(zip(table["dataset"], table["chance"]))
    columns = ["model"] * (table["model"].nunique() > 1) + [
        "setting", "dataset", "accuracy", "ci_low", "ci_high", "best_constant", "negation_rule", "consequent_rule",
        "reading"]
    rates = ["accuracy", "best_constant", "negation_rule", "consequent_rule"]
    return present(table[columns], percent=rates, intervals={"accuracy": ("ci_low", "ci_high")},
                   headers={"accuracy": "Accuracy [95% CI]", "best_constant": "Constant", "negation_rule": "Neg. rule",
                            "consequent_rule": "Cons. rule", "reading": "Reading"},
                   missing="no such items", note="In %. Chance: " + ", ".join(
                       f"{one_decimal(level)} on {name}" for name, level in chance.items()) + ". Constant: the most "
                   "frequent gold label of these items "
                   "answered every time; negation (neg.) rule: DISPROVED when the hypothesis has a negation word, else PROVED; "
                   "consequent (cons.) rule: PROVED when a fact states the hypothesis (is it, or an implication ending in it), "
                   "DISPROVED when one states its negation, else the negation rule (FLD items only: it reads the "
                   "facts' formulas). Reading: whether the 95% interval's lower end clears the highest of chance and "
                   "them (≤: the one it does not clear). n: as in the accuracy table.")
