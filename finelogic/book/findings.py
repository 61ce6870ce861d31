"""The finding of each results page ("What this run shows"): one function per family turns its run into a
sentence whose numbers carry their n and 95% interval, each compared with its reference (chance, a baseline,
the random-init control, the base model) by :func:`against`; with nothing to score, it says so and why.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
from IPython.display import HTML

from finelogic.book.figures import figure_html
from finelogic.book.provenance import admonition
from finelogic.book.supervision import sft_rows
from finelogic.data.suites import PAPER_NAMES
from finelogic.eval.accuracy import summarize
from finelogic.eval.forced_choice import chance_level
from finelogic.eval.probing import LINEAR, MAJORITY, TEXT_ONLY
from finelogic.eval.probing_data import TASKS
from finelogic.eval.soundness import soundness_table
from finelogic.eval.stats import OVERLAP, compare_intervals, one_decimal
from finelogic.runs.accuracy import table2

def finding_box(text: str):
    """``text`` in an admonition titled "What this run shows" (the provenance box's form, its own class)."""
    return admonition("What this run shows", "finelogic-finding", text, kind="tip")


def interval_text(value: float, low: float, high: float, n: int) -> str:
    """``"40.0% [11.8, 76.9] (n = 5)"``: a percentage with its 95% interval and n."""
    return f"{one_decimal(value)}% [{one_decimal(low)}, {one_decimal(high)}] (n = {int(n)})"


def against(low: float, high: float, other_low: float, other_high: float | None = None) -> str:
    """``"above"``, ``"below"`` or ``"indistinguishable from"`` another interval (apart only when they do not
    overlap) or a fixed level (``other_high`` None), by :func:`finelogic.eval.stats.compare_intervals`."""
    where = compare_intervals(low, high, other_low, other_high)  # "above" and "below" are the words already
    return "indistinguishable from" if where == OVERLAP else where


def _empty(frame: Any) -> bool:
    return not isinstance(frame, pd.DataFrame) or frame.empty


# --- 01 datasets -----------------------------------------------------------------------------------------


def datasets(run) -> str:
    """Which evaluation sets the run loaded, how many items each, and which are real and which generated."""
    sets = getattr(run, "sets", None)
    if _empty(sets):
        return "This run loaded no evaluation set, so the page supports nothing about the data."
    present = sets[sets["present"].astype(bool)]
    missing = sets[~sets["present"].astype(bool)]
    if present.empty:
        return ("This run found none of the evaluation sets (" + ", ".join(missing["paper_name"]) + "): no real "
                "data was given (`FINELOGIC_DATA_DIR`) and no stand-in was generated.")
    loaded = [f"{row.paper_name} {int(row.samples)} items ({'generated stand-in' if row.generated else 'real data'})"
              for row in present.itertuples()]
    text = f"This run loads {int(present['samples'].sum())} items: " + ", ".join(loaded)
    if not missing.empty:
        text += "; " + " and ".join(missing["paper_name"]) + " are not present (no real data was given)"
    real = present[~present["generated"].astype(bool)]
    if real.empty:
        text += ". No set is real benchmark data, so the accuracies on the later pages are on stand-ins."
    else:
        text += f". Real benchmark data: {', '.join(real['paper_name'])}."
    return text


# --- 02 accuracy -----------------------------------------------------------------------------------------


def _scored_markers(records: pd.DataFrame) -> int:
    unscored = records[["no_answer", "no_output", "truncated"]].astype(bool).any(axis=1)
    return int((~unscored).sum())


#: At most this many cells above or below chance are quoted with their intervals; the rest are counted.
QUOTED = 3


def _against_chance(summary: pd.DataFrame, several: bool) -> str:
    """``"above chance on A 50.0% [..] (n = ..), chance 33.3%, and indistinguishable from chance on B; C"``: each
    summary row (``[model] dataset setting``, the model named when ``several``) against chance, the cells that
    differ quoted (at most :data:`QUOTED` each), the others named (counted beyond :data:`QUOTED`)."""
    verdicts: dict[str, list[tuple[str, str]]] = {"above": [], "below": [], "indistinguishable from": []}
    for row in summary.itertuples():
        name = (f"{row.model} " if several else "") + f"{PAPER_NAMES.get(row.dataset, row.dataset)} {row.setting}"
        verdicts[against(row.ci_low, row.ci_high, row.chance)].append(
            (name, f"{name} {interval_text(row.accuracy, row.ci_low, row.ci_high, row.n)}, chance {row.chance:.1f}%"))
    parts = []
    for verdict, cells in verdicts.items():
        if not cells:
            continue
        if verdict == "indistinguishable from":
            names = "; ".join([name for name, _ in cells]) if len(cells) <= QUOTED else (
                f"all {len(cells)} cells" if len(cells) == len(summary) else f"the other {len(cells)} cells")
            parts.append(f"{verdict} chance on {names}")
            continue
        quoted = [text for _, text in cells[:QUOTED]]
        more = f" and {len(cells) - QUOTED} more" if len(cells) > QUOTED else ""
        parts.append(f"{verdict} chance on {'; '.join(quoted)}{more}")
    return ", and ".join(parts)


def accuracy(run) -> str:
    """Per dataset and setting: how many responses carried a marker, the marker accuracy, and the
    forced-choice accuracy (and its contextually calibrated reading, where the records carry it), each against
    chance (1 / labels)."""
    records = getattr(run, "records", None)
    if _empty(records):
        return "This run scored no response, so the page supports nothing about accuracy."
    several = "model" in records and records["model"].nunique() > 1
    by = ("model", "dataset", "setting") if several else ("dataset", "setting")
    marked = _scored_markers(records)
    ours, forced, calibrated = table2(records, by=by)
    text = f"{marked} of {len(records)} responses ended with an answer marker"
    if marked:
        ours["chance"] = [chance_level(d) for d in ours["dataset"]]
        text += "; marker accuracy is " + _against_chance(ours, several)
    else:
        text += " (the model never wrote one), so marker accuracy is 0% by construction and says nothing"
    if forced.empty:
        return text + ". No forced-choice answers were scored in this run."
    text += ". Forced-choice accuracy is " + _against_chance(forced, several)
    if not calibrated.empty:
        text += ". Contextually calibrated (against content-free inputs), it is " + _against_chance(calibrated, several)
    return text + "."


# --- 03 depth --------------------------------------------------------------------------------------------


def depth(run) -> str:
    """Whether forced-choice accuracy on FLD changes with proof depth beyond the 95% intervals (numbered
    depth buckets; the UNKNOWN bucket has no depth)."""
    forced = getattr(run, "forced", None)
    if _empty(forced):
        return ("No forced-choice answer was scored in this run, so the page supports nothing about accuracy "
                "and depth.")
    numbered = forced[forced["depth_bucket"].astype(str) != "UNKNOWN"]
    sentences = []
    for (model, setting), group in numbered.groupby(["model", "setting"], sort=False):
        cells = [f"{r.depth_bucket}: {interval_text(r.accuracy, r.ci_low, r.ci_high, r.n)}" for r in group.itertuples()]
        apart = [(a.depth_bucket, b.depth_bucket) for a in group.itertuples() for b in group.itertuples()
                 if a.ci_low > b.ci_high]
        if len(group) < 2:
            verdict = "has only one depth bucket, so no change can be read"
        elif apart:
            verdict = ("changes with depth beyond the 95% intervals (" + ", ".join(f"{a} above {b}" for a, b in apart)
                       + ")")
        else:
            verdict = "does not change with depth beyond the 95% intervals (they overlap)"
        sentences.append(f"{setting}: forced-choice accuracy {verdict}: {'; '.join(cells)}")
    if not sentences:
        return "No FLD item with a numbered depth was scored, so the page supports nothing about depth."
    chance = float(numbered["chance"].iloc[0])
    return ". ".join(sentences) + f" (chance {chance:.1f}%)."


# --- 04 soundness ----------------------------------------------------------------------------------------


def soundness(run) -> str:
    """How many responses could be scored and, if any, their all-valid / all-relevant / all-atomic rates
    with 95% intervals beside the gold proofs'; else why none could."""
    steps = getattr(run, "steps", None)
    policy = getattr(run, "policy", "principled")
    if _empty(steps):
        return "This run has no model responses, so the page supports nothing about the soundness of our chains."
    table = soundness_table(steps, policy=policy, by=())
    samples, scored = int(table["samples"].sum()), int(table["scored"].sum())
    if not scored:
        no_steps, undecided = int(table["no_steps"].sum()), int(table["undecided"].sum())
        why = (([f"{no_steps} wrote no step in the FLD notation (`fact1 & int2 -> int3: ...`)"] if no_steps else [])
               + ([f"the judge could not decide {undecided}"] if undecided else []))
        return (f"0 of {samples} responses could be scored ({'; '.join(why)}), so the page supports nothing "
                "about the soundness of our model's chains.")
    row = table.iloc[0]
    gold_steps = getattr(run, "gold_steps", None)
    gold = None if _empty(gold_steps) else soundness_table(gold_steps, policy=policy, by=())
    g = gold.iloc[0] if gold is not None and not gold.empty and int(gold["scored"].iloc[0]) else None
    cells = []
    for metric in ("all_valid", "all_relevant", "all_atomic"):
        value, low, high = (100 * row[metric], 100 * row[f"{metric}_low"], 100 * row[f"{metric}_high"])
        cell = f"{metric.replace('_', ' ')} {interval_text(value, low, high, scored)}"
        if g is not None:
            verdict = against(low, high, 100 * g[f"{metric}_low"], 100 * g[f"{metric}_high"])
            cell += f", {verdict} the gold proofs' {100 * g[metric]:.1f}%"
        cells.append(cell)
    return f"{scored} of {samples} responses could be scored: " + "; ".join(cells) + "."


# --- 05 probing ------------------------------------------------------------------------------------------


def finding_text(summary: pd.DataFrame, readout: str, model: str, control: str | None = None) -> str:
    """One sentence on what the data supports: for each task, whether ``model``'s probe row accuracy CI
    clears the text-only baseline's, the majority class's and the control's (random-init) CI upper ends;
    where it does not clear them all, which ones it does and does not clear, with their values."""
    chosen = summary[summary["readout"] == readout].set_index(["model", "probe", "task"])
    if chosen.empty:
        return "This run trained no probe, so the page supports nothing about what the hidden states encode."
    shared_model = summary["model"].iloc[0]
    names = {TEXT_ONLY: "the text-only baseline", MAJORITY: "the majority class", LINEAR: "the random-init control"}
    clear, not_clear = [], []
    for task in TASKS:
        if (model, LINEAR, task) not in chosen.index:
            continue
        ours = chosen.loc[(model, LINEAR, task)]
        others = [(names[name], chosen.loc[(shared_model, name, task)]) for name in (TEXT_ONLY, MAJORITY)
                  if (shared_model, name, task) in chosen.index]
        if control is not None and (control, LINEAR, task) in chosen.index:
            others.append((names[LINEAR], chosen.loc[(control, LINEAR, task)]))
        text = f"{task.upper()} {_rows_interval(ours)}"
        beaten = [(n, o) for n, o in others if ours["row_ci_low"] > o["row_ci_high"]]
        within = [(n, o) for n, o in others if ours["row_ci_low"] <= o["row_ci_high"]]
        if others and not within:
            clear.append(text)
            continue
        if within:
            text += (" (not beyond " + ", ".join(f"{n}'s {_rows_interval(o)}" for n, o in within)
                     + ("; beyond " + ", ".join(f"{n}'s {_rows_interval(o)}" for n, o in beaten) if beaten else "")
                     + ")")
        not_clear.append(text)
    problems = int(chosen["problems"].max())
    against = "the text-only and majority baselines" + (" and the random-init control" if control else "")
    if not clear:
        return (f"On {problems} test problems no probe of {model} beats all of {against} beyond their 95% CIs: "
                + "; ".join(not_clear) + ". At this size the data support no claim that its states encode more "
                "than those baselines pick up.")
    return (f"On {problems} test problems the probe of {model} beats {against} beyond their 95% CIs on "
            + "; ".join(clear) + (", but not on " + "; ".join(not_clear) if not_clear else "") + ".")


def _rows_interval(row: Any) -> str:
    return f"{row['row_accuracy']:.1f}% of rows [{row['row_ci_low']:.1f}, {row['row_ci_high']:.1f}]"


def probing(run, control: str | None = None) -> str:
    """:func:`finding_text` for a probing run: its first readout, its first model, and ``control`` (the
    random-init model) when the run probed it."""
    summary = getattr(run, "summary", None)
    if _empty(summary):
        return "This run trained no probe, so the page supports nothing about what the hidden states encode."
    models = run.provenance.models
    return finding_text(summary, run.provenance.settings["readouts"][0], models[0],
                        control if control in models else None)


# --- 06 supervision --------------------------------------------------------------------------------------


#: The base model's row each fine-tuned row is compared with: the same prompt (LogiPT has its own, Direct).
BASE_SETTINGS = {"SFT": "CoT", "LogiPT": "Direct"}


def supervision(run, accuracy_run=None) -> str:
    """Whether each style's training loss fell (first vs last optimizer step) and, with the accuracy run that
    evaluated the checkpoints, each fine-tuned model's accuracy against the base model's, with 95% intervals."""
    training = getattr(run, "training", None)
    if _empty(training):
        return "This run trained no model, so the page supports nothing about supervision styles."
    losses = [f"{row.style} {row.loss_first:.2f} → {row.loss_last:.2f} over {int(row.steps)} steps"
              for row in training.itertuples()]
    fell = int((training["loss_last"] < training["loss_first"]).sum())
    text = (f"The training loss fell from the first to the last step for {fell} of {len(training)} styles ("
            + "; ".join(losses) + f"; {int(training['examples'].max())} training examples each)")
    if accuracy_run is None:
        return text + "; the accuracy, depth, soundness and probing pages evaluate the fine-tuned models."
    records = sft_rows(accuracy_run.records)
    if _empty(records):
        return text + "; no fine-tuned model was evaluated."
    ours = summarize(records, by=("setting",)).set_index("setting")
    cells, bases = [], {}
    for setting, row in ours.iterrows():
        base = None if setting in BASE_SETTINGS.values() else BASE_SETTINGS.get(setting, BASE_SETTINGS["SFT"])
        if base is None or base not in ours.index:
            continue
        b = bases.setdefault(base, ours.loc[base])
        cells.append(f"{setting} {interval_text(row['accuracy'], row['ci_low'], row['ci_high'], row['n'])} "
                     f"({against(row['ci_low'], row['ci_high'], b['ci_low'], b['ci_high'])} {base})")
    if not cells:
        return text + "; the run has no base-model row to compare the fine-tuned models with."
    base_text = "; ".join(f"{base} {interval_text(b['accuracy'], b['ci_low'], b['ci_high'], b['n'])}"
                          for base, b in bases.items())
    text += (f". Accuracy of the fine-tuned models against the base model under the same prompt ({base_text}): "
             + "; ".join(cells))
    if _scored_markers(records) == 0:
        text += "; no response carried an answer marker, so every accuracy here is 0% by construction"
    return text + "."


# --- 07 LogicMark ----------------------------------------------------------------------------------------


#: The card's row the LogicMark finding compares our embedded model with (its base model's hub name).
LOGICMARK_CARD_MODEL = "SmolLM2-135M"


def logicmark_models(run, models: Sequence[str], control: str | None, card: pd.DataFrame,
                     reference: str | None = None) -> str:
    """Which of ``models`` (those the run scored) are above the random-init ``control``, by card-style average
    and 95% interval (``item_mean`` when a hop bucket is empty), and how ``reference`` (our embedded model)
    compares with the :data:`LOGICMARK_CARD_MODEL` row of ``card`` (``paper.reported("logicmark")``): its
    reported avg and 1-hop (points: the card prints no interval) against ``reference``'s intervals."""
    by_hop = getattr(run, "by_hop", None)
    if _empty(by_hop):
        return "This run scored no LogicMark item, so the page supports nothing."
    rows = by_hop.set_index(["model", "metric"])

    def has(model: str, metric: str = "item_mean") -> bool:
        return (model, metric) in rows.index and not pd.isna(rows.loc[(model, metric), "value"])

    def metric_of(names: Sequence[str]) -> str:  # the card's hop-share-weighted avg, unless a hop bucket is empty
        return "avg" if all(has(m, "avg") for m in names) else "item_mean"

    def cell(model: str, metric: str) -> str:
        r = rows.loc[(model, metric)]
        return interval_text(r["value"], r["ci_low"], r["ci_high"], r["n"])

    scored = [m for m in models if has(m) and int(rows.loc[(m, "item_mean"), "n"])]
    if not scored:
        return "This run scored no LogicMark item with " + " or ".join(models) + ", so the page supports nothing."
    sentences = []
    if control is not None and has(control):
        metric = metric_of([*scored, control])
        c = rows.loc[(control, metric)]
        verdicts = {}
        for m in scored:
            r = rows.loc[(m, metric)]
            verdict = against(r["ci_low"], r["ci_high"], c["ci_low"], c["ci_high"])
            verdicts.setdefault(verdict, []).append(f"{m} {cell(m, metric)}")
        label = "card-style average" if metric == "avg" else "accuracy over all items"
        parts = [f"{verdict} it: {'; '.join(cells)}" for verdict, cells in verdicts.items()]
        sentences.append(f"Against the random-init control ({label} {cell(control, metric)}), "
                         + ", and ".join(parts) + " (apart only where the 95% intervals do not overlap)")
    else:
        sentences.append("This run scored no random-init control, so it shows no model above one")
    reference = reference if reference in scored else None
    if reference is not None:
        printed = card[card["model"] == LOGICMARK_CARD_MODEL].set_index("metric")["value"]
        if "avg" in printed.index and "1-hop" in printed.index:
            metric = metric_of([reference])
            r, one = rows.loc[(reference, metric)], rows.loc[(reference, "1-hop")]
            name = "average" if metric == "avg" else "accuracy over all items"
            cells = [f"its {name} {cell(reference, metric)} is "
                     f"{against(r['ci_low'], r['ci_high'], printed['avg'])} the card's {printed['avg']:.2f}%"]
            if int(one["n"]) and not pd.isna(one["value"]):
                cells.append(f"its 1-hop accuracy {cell(reference, '1-hop')} is "
                             f"{against(one['ci_low'], one['ci_high'], printed['1-hop'])} the card's "
                             f"{printed['1-hop']:.2f}%")
            else:
                cells.append("it has no 1-hop item in this run")
            sentences.append(f"Beside the card's {LOGICMARK_CARD_MODEL} row, reported on the card's own items (card, "
                             f"\"Benchmark Results\"), {reference}: " + "; ".join(cells))
    return ". ".join(sentences) + "."


# --- the landing page's headline figure ------------------------------------------------------------------


def headline(fig):
    """``fig`` as HTML (:func:`finelogic.book.figures.figure_html`: an ``<img>`` with alt text, closed), to
    ``glue`` for the landing page: a glued HTML output keeps its alt text across documents, a PNG one would
    lose it."""
    return HTML(figure_html(fig))
