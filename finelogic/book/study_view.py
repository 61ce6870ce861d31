"""The laptop-scale study on the book's pages: its committed runs (``results/study/``, :mod:`finelogic.study`),
their units, and whether the code that made them changed since (checked with git when the page is built).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from IPython.display import Markdown

from finelogic.book import figures
from finelogic.book.accuracy import cue_rows
from finelogic.book.claims import forest_figure, scan_table
from finelogic.book.tables import Table, paper_table
from finelogic.config import results_dir
from finelogic.data.suites import PAPER_NAMES
from finelogic.eval.claims import cut_at_cap
from finelogic.eval.cues import BEATS, consequent_rule
from finelogic.eval.stats import one_decimal, wilson_interval
from finelogic.runs.registry import family as find_family
from finelogic.study import CODE, MANIFEST, UNIT_FAMILIES, code_changed, unit_names

PROFILE = "study"
#: Where ``benchmarks/study_learning_curve.py`` results are committed (with ``provenance.json``).
CURVE = "learning_curve"
HELD_OUT = {"fld_0-2": "FLD depths 0–2 (the training depths)", "fld_3-5": "FLD depths 3–5 (beyond them)",
            "prontoqa_3": "ProntoQA 3-hop (generated)"}


def folder() -> Path:
    return results_dir(PROFILE)


def read(family: str) -> Any | None:
    """The study's run of ``family`` (merged from its units), or None when this checkout has none."""
    directory = folder() / family
    if not (directory / "run.json").is_file():
        return None
    return find_family(family).run_type.read(directory)


def units() -> pd.DataFrame:
    """The study's units (``results/study/units.csv``), empty when none is committed."""
    path = folder() / MANIFEST
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def header(family: str) -> Markdown:
    """The page's study section: its units (commit, date, minutes, load), those left out or not yet run, and
    whether this family's code changed since each unit's commit."""
    made, run = units(), read(family)
    if made.empty or run is None:
        return Markdown("No laptop-scale study results are in this checkout (`results/study/`). `make study` makes "
                        "them (hours on 2 cores, in units that each finish on their own; see the reproduce page).")
    rows, changed = [], []
    paths = CODE.get(family, ("finelogic",))
    derived = family not in UNIT_FAMILIES  # made at assembly: the units' commits made only its upstream records
    left = made[~made["in_study"].astype(bool)]
    made = made.drop(left.index)
    for unit in made.itertuples():
        rows.append(f"{unit.unit} (commit `{unit.commit}`, {str(unit.finished)[:10]}, {unit.seconds / 60:.0f} min, "
                    f"load {unit.load_mean:.1f})")
        status = code_changed(str(unit.commit), paths[1:] if derived else paths)
        if status is not False:
            changed.append(f"{unit.unit}: " + ("**yes**" if status else
                                               f"cannot tell (commit `{unit.commit}` not in this checkout's history)"))
    if derived:  # its own module ran at the assembly's commit
        assembled = run.provenance.commit
        status = code_changed(str(assembled), paths[:1])
        if status is None:
            changed.append(f"the assembly: cannot tell (commit `{assembled}`)")
        elif status:
            changed.append(f"the assembly (commit `{assembled}`, `{paths[0]}`): **yes**")
    missing = [u for u in unit_names(PROFILE) if u not in set(made["unit"]) | set(left["unit"])]
    text = ("**The laptop-scale study** (profile `study`, committed in `results/study/`): the embedded "
            "SmolLM2-135M-Instruct fine-tuned in the paper's supervision styles on shallow problems and tested like "
            "the paper's models (the reproduce page). Units: " + "; ".join(rows) + ". Minutes and load are those of "
            "the process that wrote each unit: one that resumed from a kept checkpoint and stored answers counts only "
            "what was left (the training table gives each checkpoint's training time; `results/study/README.md`, "
            "every run of the study).")
    if len(left):
        text += (" Made with another config than the study's now, so left out (their rows are absent) until made "
                 "again: " + "; ".join(f"{u.unit} (commit `{u.commit}`; `finelogic study --units {u.unit} --again`)"
                                       for u in left.itertuples()) + ".")
    if missing:
        text += f" Not yet run: {', '.join(missing)} (their rows are absent; `make study` runs them)."
    where = ", ".join(f"`{p}`" for p in paths)
    if changed:
        text += f" Code of this page's numbers ({where}) changed since the commit of " + "; ".join(changed) + "."
    else:
        text += (f" The code of this page's numbers ({where}) has not changed since the units' commits (checked "
                 "when this page was built).")
    return Markdown(text)


def learning_curve() -> pd.DataFrame:
    """The NL style's learning curve, one row per stage and held-out set (accuracy with Wilson 95% bounds, in
    %); empty when none is committed."""
    directory = folder() / CURVE
    path = directory / "curve.jsonl"
    if not path.is_file():
        return pd.DataFrame()
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stage = json.loads(line)
        for name in HELD_OUT:
            records = pd.read_csv(directory / f"curve.jsonl.stage{stage['stage']}.{name}.csv")
            right, n = int(records["correct"].sum()), len(records)
            low, high = wilson_interval(right, n)
            rows.append({"examples_seen": stage["examples_seen"], "set": HELD_OUT[name], "n": n,
                         "accuracy": round(100 * right / n, 1), "ci_low": round(100 * low, 1),
                         "ci_high": round(100 * high, 1), "marker_rate": stage[name]["marker_rate"],
                         "train_seconds": stage["train_seconds"], "tokens_per_s": stage["tokens_per_s"]})
    return pd.DataFrame(rows)


def curve_provenance() -> dict[str, Any]:
    path = folder() / CURVE / "provenance.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


@figures.themed
def curve_figure(curve: pd.DataFrame):
    """Held-out accuracy against training examples seen, one line per held-out set, 95% intervals as bars,
    chance as dashed lines (33.3% for FLD's three labels, 50% for ProntoQA's two)."""
    fig, axes = figures.new_figure(height=3.6)
    ax = axes[0, 0]
    for name, rows in curve.groupby("set", sort=False):
        ax.errorbar(rows["examples_seen"], rows["accuracy"],
                    yerr=[rows["accuracy"] - rows["ci_low"], rows["ci_high"] - rows["accuracy"]],
                    marker="o", capsize=3, label=name)
    for level in (100 / 3, 50):
        ax.axhline(level, linestyle="--", color="grey", linewidth=0.8)
    ax.set_xlabel("training examples seen (NL style)")
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 100)
    ax.legend()
    return fig


def claims_short():
    """The landing page's table of the study's verdicts (:func:`finelogic.book.claims.scan_table`), or a one-cell
    table saying none is committed."""
    made = read("claims")
    if made is None:
        return Table(pd.DataFrame({"Laptop-scale study": [
            "No study results are in this checkout (results/study/); `make study` makes them."]}))
    return scan_table(made)


def test_set_note(run) -> str:
    """What the consequent rule (:func:`finelogic.eval.cues.consequent_rule`) scores on the study's committed
    FLD test items, generated before the FLD generator added decoy facts against that cue."""
    items = [p for s in run.eval_sets if s.name == "fld" for p in s.problems]
    decided = [p for p in items if p.label != "UNKNOWN"]
    if not decided:
        return ""
    hits = {p.id: consequent_rule(p) == p.label for p in items}  # each item's formulas parsed once
    right = sum(hits[p.id] for p in decided)
    overall = sum(hits.values())
    return (f"The study's FLD test items were generated before the FLD generator added decoy facts (facts whose "
            f"consequent is the hypothesis or its negation but whose antecedent cannot be derived). On them the "
            f"consequent rule, which follows no chain, answers {right} of the {len(decided)} PROVED/DISPROVED items "
            f"right ({100 * right / len(decided):.1f}%; {100 * overall / len(items):.1f}% of all {len(items)}). The "
            "tiny and study profiles generate FLD items with the decoys from now on; the committed study was not "
            "trained and answered again, so its FLD verdicts are read against this rule.")


def claims_forest():
    """The forest plot of the study's verdicts, or None when no study is committed."""
    made = read("claims")
    return None if made is None else forest_figure(made, title="The paper's findings, tested on the laptop-scale study")


def shortcut_sentence(run) -> str:
    """For every fine-tuned row of an accuracy run (``SFT-<style>``, LogiPT), on each test set: whether its 95%
    interval clears the cue rules (:func:`finelogic.eval.cues.cue_table`; the paper's caveat, §5.2.1)."""
    table = cue_rows(run)
    tuned = table[table["setting"].str.startswith("SFT-") | (table["setting"] == "LogiPT")]
    if tuned.empty:
        return "No fine-tuned model is in these records yet, so no accuracy can be read against the cue rules."
    parts = []
    for setting, rows in tuned.groupby("setting", sort=False):
        above = [PAPER_NAMES.get(d, d) for d in rows.loc[rows["reading"] == BEATS, "dataset"]]
        not_above = [f"{PAPER_NAMES.get(r.dataset, r.dataset)} ({r.reading})" for r in rows.itertuples()
                     if r.reading != BEATS]
        text = f"{setting}: above every baseline on {', '.join(above) if above else 'no test set'}"
        if not_above:
            text += "; " + ", ".join(not_above)
        parts.append(text)
    return ("Read against the cue rules (95% interval's lower end above the highest of chance, the best constant "
            "answer, the negation rule and, on FLD, the consequent rule): " + ". ".join(parts) + ". Where a "
            "fine-tuned model is not above them, its gains can be a shortcut (the paper's own caveat of shallow "
            "pattern matching, §5.2.1), not deduction.")


#: Where ``benchmarks/study_target_lengths.py`` results are committed (``lengths.csv``, ``provenance.json``).
TARGET_LENGTHS = "target_lengths"


def target_lengths() -> pd.DataFrame:
    """Per style and FLD depth, the token length of the gold answers the style is trained to write on the
    study's FLD test items; empty when none is committed."""
    path = folder() / TARGET_LENGTHS / "lengths.csv"
    return pd.read_csv(path, dtype={"depth": str}) if path.is_file() else pd.DataFrame()


def cap_sentence(run) -> str:
    """What the token cap did to an accuracy run's rows: the responses cut before an answer per row and test
    set, the rows the claims leave out (:func:`finelogic.eval.claims.cut_at_cap`), and the gold answers longer
    than the cap (:func:`target_lengths`)."""
    summary = run.summary
    if summary is None or summary.empty or "truncated" not in summary:
        return "These records do not say how many responses the token cap cut."
    settings = run.provenance.settings
    cap = (settings.get("generation") or {}).get("max_new_tokens")
    tuned_cap = (settings.get("fine_tuned_generation") or {}).get("max_new_tokens", cap)
    cap_text = (f"the {cap}-token cap" if cap == tuned_cap else
                f"the token cap ({cap} tokens for the base model, {tuned_cap} for the fine-tuned ones)")
    cut_rows = cut_at_cap(run.records)  # the claims' rule: more than half of a row's items cut
    parts, mostly = [], []
    for setting, rows in summary.groupby("setting", sort=False):
        cut, n = int(rows["truncated"].sum()), int(rows["n"].sum())
        each = ", ".join(f"{PAPER_NAMES.get(r.dataset, r.dataset)} {int(r.truncated)}/{int(r.n)}"
                         for r in rows.itertuples())
        name = f"the base model ({setting})" if not str(setting).startswith(("SFT-", "LogiPT")) else str(setting)
        parts.append(f"{name} {cut} of {n} ({each})")
        if str(setting) in cut_rows:
            mostly.append(name)
    text = (f"Responses cut at {cap_text} before an answer marker (scored wrong): " + "; ".join(parts) + ".")
    if mostly:
        names = mostly[0] if len(mostly) == 1 else f"{', '.join(mostly[:-1])} and {mostly[-1]}"
        text += (f" {names[0].upper()}{names[1:]} ran out of tokens on most items: there the accuracy measures the "
                 "cap, not the model, and the claims page leaves a row out of a comparison when most of the items "
                 "it reads were cut.")
    lengths = target_lengths()
    if not lengths.empty:
        whole = lengths[lengths["depth"] == "all"]
        about = folder() / TARGET_LENGTHS / "provenance.json"
        counted = json.loads(about.read_text(encoding="utf-8")).get("cap") if about.is_file() else None
        over = "; ".join(f"{int(r.over_cap)} of {int(r.n)} for {r.style} (median {int(r.median)} tokens, longest "
                         f"{int(r.max)})" for r in whole.itertuples())
        text += (" The gold answers the styles are trained to write, on the same FLD test items, are longer than "
                 f"{f'{counted} tokens' if counted else 'the cap'} on {over} (`benchmarks/study_target_lengths.py`, "
                 "committed in `results/study/target_lengths/`).")
    return text


def source_line(family: str) -> Markdown:
    """One line under a page's study numbers: what they are and where their provenance is said (once, on the
    claims page and in ``results/study/README.md``)."""
    if read(family) is None:
        return Markdown("No laptop-scale study is in this checkout (`results/study/`); `make study` makes it.")
    return Markdown("**The study**: the embedded SmolLM2-135M-Instruct fine-tuned in the paper's four styles "
                    "(`make study`, committed in `results/study/`). How, when and at what commit it was made: "
                    "{doc}`08_claims` and `results/study/README.md`.")


def _range(values: pd.Series) -> str:
    low, high = float(values.min()), float(values.max())
    return f"{one_decimal(low)}%" if one_decimal(low) == one_decimal(high) else f"{one_decimal(low)}–{one_decimal(high)}%"


def accuracy_lead(run) -> str:
    """The accuracy page's first sentence: on the study's FLD items, the best fine-tuned style with its 95%
    interval and n, the other styles, chance and the consequent rule, the base model and what the token cap
    did to it, and the paper's fine-tuned rows on FLD (Table 2)."""
    table = cue_rows(run)
    fld = table[table["dataset"] == "fld"]
    tuned = fld[fld["setting"].astype(str).str.startswith("SFT-")]
    if tuned.empty:
        return "The study holds no fine-tuned model's FLD answers yet."
    best = tuned.loc[tuned["accuracy"].idxmax()]
    rest = tuned.drop(best.name)
    text = (f"On the study's {int(best.n)} FLD test items the best style, {best.setting}, answers "
            f"{one_decimal(best.accuracy)}% [{one_decimal(best.ci_low)}, {one_decimal(best.ci_high)}] right"
            + (f" and the other styles {_range(rest['accuracy'])}" if len(rest) else "")
            + f", against chance {best.chance:.1f}%")
    if pd.notna(best.consequent_rule):
        text += (f" and {one_decimal(best.consequent_rule)}% for the consequent rule, which answers without "
                 "reasoning")
    base = run.summary[(run.summary["dataset"] == "fld")
                       & ~run.summary["setting"].astype(str).str.startswith("SFT-")]
    if len(base):
        row = base.iloc[0]
        text += (f". The base model ({row.setting}) scores {one_decimal(row.accuracy)}% (n = {int(row.n)}): "
                 f"{int(row.truncated)} of its answers were cut at the token cap")
    paper = paper_table("table2")
    sft = paper[[str(s).startswith("SFT-") for s in paper.index.get_level_values("setting")]]["FLD"]
    return text + f". The paper's fine-tuned 7–8B models reach {_range(sft)} on FLD (Table 2)."


def depth_lead(run) -> str:
    """The depth page's first sentence: which depth buckets the study's FLD items reach, with n, and whether
    any style's accuracy changes between them beyond the 95% intervals."""
    summary = run.summary[run.summary["depth_bucket"].astype(str) != "UNKNOWN"]
    buckets = list(dict.fromkeys(summary["depth_bucket"].astype(str)))
    if len(buckets) < 2:
        return "The study's FLD items fall in one depth bucket, so no change with depth can be read."
    n = int(summary.groupby("depth_bucket")["n"].max().min())
    cells, apart = [], []
    for setting, rows in summary.groupby("setting", sort=False):
        first, last = rows.iloc[0], rows.iloc[-1]
        if not str(setting).startswith("SFT-"):
            continue
        cells.append(f"{setting} {one_decimal(first.accuracy)} → {one_decimal(last.accuracy)}")
        if first.ci_low > last.ci_high or last.ci_low > first.ci_high:
            apart.append(str(setting))
    change = ("no style's accuracy changes beyond the 95% intervals" if not apart
              else f"{', '.join(apart)} change beyond the 95% intervals")
    return (f"The study's FLD items reach buckets {', '.join(buckets)} only (n = {n} each), so the paper's fall at "
            f"16–19 steps (Table 5) is not tested here; from {buckets[0]} to {buckets[-1]} {change} "
            f"({'; '.join(cells)}%).")


def supervision_lead(run) -> str:
    """The supervision page's first sentence: per test set, the study's best fine-tuned style with its 95%
    interval and n, and whether its interval clears the runner-up's."""
    summary = run.summary[run.summary["setting"].astype(str).str.startswith("SFT-")]
    if summary.empty:
        return "The study holds no fine-tuned style's answers yet."
    parts = []
    for dataset, rows in summary.groupby("dataset", sort=False):
        rows = rows.sort_values("accuracy", ascending=False)
        best, second = rows.iloc[0], rows.iloc[1] if len(rows) > 1 else None
        apart = second is not None and best.ci_low > second.ci_high
        parts.append(f"{PAPER_NAMES.get(dataset, dataset)} {best.setting} {one_decimal(best.accuracy)}% "
                     f"[{one_decimal(best.ci_low)}, {one_decimal(best.ci_high)}] (n = {int(best.n)}"
                     + ("" if second is None else f"; {'above' if apart else 'overlapping'} {second.setting}'s "
                                                    f"{one_decimal(second.accuracy)}%") + ")")
    return ("The study's best style per test set: " + "; ".join(parts) + ". In the paper SFT-NL is the best style "
            "on FOLIO and Multi-LogiEval, which no style was trained on, for both models (Table 2, Section 5.2.1).")


def cue_fact(run) -> str:
    """The claims page's deciding fact, in one sentence: on the study's FLD items the consequent rule (which
    follows no chain) scores as high as or higher than the best fine-tuned style, because those items were
    generated before the FLD generator added the decoy facts that defeat it."""
    table = cue_rows(run)
    fld = table[(table["dataset"] == "fld") & table["setting"].astype(str).str.startswith("SFT-")]
    if fld.empty or fld["consequent_rule"].isna().all():
        return ""
    best = fld.loc[fld["accuracy"].idxmax()]
    rule = float(best.consequent_rule)
    side = "above" if rule > best.accuracy else "not above"
    return (f"**Why the accuracy findings are inconclusive:** on the study's {int(best.n)} FLD test items the "
            "consequent rule, which answers PROVED when a fact's consequent is the hypothesis (DISPROVED for its "
            f"negation) and follows no chain, scores {one_decimal(rule)}%, {side} the best style's "
            f"{one_decimal(best.accuracy)}% ({best.setting}, [{one_decimal(best.ci_low)}, {one_decimal(best.ci_high)}], "
            f"n = {int(best.n)}): the items predate the decoy facts that defeat the rule, so no FLD gain can be told from this shortcut.")


def probing_lead(run) -> str:
    """The probing page's first sentence: per task, the base model's probe row accuracy beside the text-only
    baseline's (the candidate line alone), whether it clears it beyond the 95% intervals, and the verdicts of
    the study's Table 4 findings on fine-tuning."""
    from finelogic.eval.probing import LINEAR, TEXT_ONLY
    from finelogic.eval.probing_data import TASKS

    summary = getattr(run, "summary", None)
    if summary is None or summary.empty:
        return "The study trained no probe."
    readout, base = run.provenance.settings["readouts"][0], run.provenance.models[0]
    rows = summary[summary["readout"] == readout].set_index(["model", "probe", "task"])
    cells, cleared = [], []
    for task in TASKS:
        if (base, LINEAR, task) not in rows.index or (base, TEXT_ONLY, task) not in rows.index:
            continue
        probe, text = rows.loc[(base, LINEAR, task)], rows.loc[(base, TEXT_ONLY, task)]
        cells.append(f"{task.upper()} {one_decimal(probe['row_accuracy'])}% against "
                     f"{one_decimal(text['row_accuracy'])}%")
        cleared.append(bool(probe["row_ci_low"] > text["row_ci_high"]))
    if not cells:
        return "The study's probing run has no probe beside its text-only baseline."
    problems = int(rows["problems"].max())
    said = ("clear it beyond the 95% intervals on every task" if all(cleared) else
            "do not clear it beyond the 95% intervals" if not any(cleared) else
            "clear it beyond the 95% intervals on some tasks only")
    text = (f"On the study's {problems} test problems the base model's probes read the rows' labels about as well "
            f"as the text-only baseline, which sees the candidate line alone ({'; '.join(cells)} of rows right), and "
            f"{said}.") if not any(cleared) else (
            f"On the study's {problems} test problems the base model's probes, beside the text-only baseline "
            f"({'; '.join(cells)} of rows right), {said}.")
    verdicts = read("claims")
    if verdicts is not None:
        table4 = verdicts.verdicts[verdicts.verdicts["source"].astype(str).str.startswith("Table 4")]
        if len(table4):
            counts = table4["verdict"].value_counts()
            text += (f" The study's {len(table4)} findings on how fine-tuning moves CSS, RFI and NSD (Table 4, "
                     "§5.2.3): " + ", ".join(f"{k} {v}" for v, k in counts.items()) + " ({doc}`08_claims`).")
    return text
