"""The one-file HTML report of ``finelogic eval`` (:func:`finelogic.evaluate.evaluate`).

Each family's section shows what its book page shows for the models evaluated, made by the same helpers:
a figure with the paper's numbers beside the models' (hollow grey marks: reported), the "what this run
shows" sentence, the tables with 95% intervals, the cue rules an accuracy must clear, and one response
judged step by step. Figures are embedded as PNG data, styles inline: the file opens offline, alone.
"""
from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import matplotlib.pyplot as plt
from markdown_it import MarkdownIt

from finelogic import paper
from finelogic.book import figures, findings, logicmark, probing, soundness
from finelogic.book.accuracy import cue_view, table2_view, table5_view
from finelogic.book.tables import paper_table, present_paper
from finelogic.data.suites import PAPER_NAMES
from finelogic.files import write_text_atomic
from finelogic.runs.probing import RANDOM_INIT

STYLE = """<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#1a1a1a}
h1{font-size:1.6rem}h2{font-size:1.3rem;margin-top:2.5rem;border-bottom:1px solid #ccc}
.finding{background:#eef4fb;border-left:4px solid #3b75af;padding:.6rem .9rem}
.note{color:#555;font-size:.9rem}img{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:.85rem}td,th{padding:.2rem .5rem;border-bottom:1px solid #ddd}
.scroll{overflow-x:auto}
</style>"""

_MARKDOWN = MarkdownIt("commonmark").enable("table")


def to_html(item: Any) -> str:
    """One displayable as HTML: a figure (embedded PNG with its alt text; closed), anything with its own HTML
    (a table, an HTML display object, a DataFrame), a Markdown display object, or text (read as Markdown)."""
    if isinstance(item, plt.Figure):
        return figures.figure_html(item)
    if hasattr(item, "_repr_html_"):
        return f'<div class="scroll">{item._repr_html_()}</div>'
    return _MARKDOWN.render(item.data if type(item).__name__ == "Markdown" else str(item))


def _section(title: str, finding: str, items: Iterable[Any], run) -> str:
    p = run.provenance
    where = (f"profile {p.profile}, seed {p.seed}, n = {p.n}, models {', '.join(p.models)}, commit {p.commit}, "
             f"{p.model_calls} model calls ({p.cache_hits} from the store), {p.seconds:.0f} s")
    body = "".join(to_html(i) for i in items)
    return (f"<h2>{html.escape(title)}</h2><div class='finding'>{_MARKDOWN.render(finding)}</div>{body}"
            f"<p class='note'>{html.escape(where)}</p>")


def accuracy_section(run) -> str:
    return _section("Overall accuracy (Table 2)", findings.accuracy(run), [
        figures.accuracy_bars(run.summary, names=PAPER_NAMES), table2_view(run.summary, run.forced_summary),
        "What an accuracy must beat before it says anything about reasoning (cue rules scored on the same items):",
        cue_view(run), "The paper's Table 2 (reported, " + paper.source("table2") + "):", present_paper("table2")],
        run)


def depth_section(run) -> str:
    return _section("Accuracy by proof depth on FLD (Table 5, Figure 3)", findings.depth(run), [
        figures.accuracy_by_depth(run.curves(), paper_table("table5")),
        table5_view(run.summary, run.compat, run.forced)], run)


def soundness_section(run) -> str:
    return _section("Stepwise soundness (Table 3)", findings.soundness(run), [
        soundness.table3_figure(run), soundness.table3_view(run), soundness.exclusions_view(run),
        "One response, step by step:", *soundness.one_response(run, "report")], run)


def probing_section(run) -> str:
    readout = run.provenance.settings["readouts"][0]
    return _section("Representation-level probing (Table 4)", findings.probing(run, RANDOM_INIT), [
        probing.table4_figure(run.predictions, readout), probing.table4_beside_paper(run.predictions, readout, "ours"),
        probing.table4_with_cis(run.summary, readout)], run)


def logicmark_section(run) -> str:
    card = paper.reported("logicmark").assign(setting="card (reported)")
    models = list(run.provenance.models)
    return _section("LogicMark: per-hop log-likelihood accuracy", findings.logicmark_models(run, models, None, card), [
        logicmark.hop_figure(run.by_hop, card), logicmark.ours_and_nearest_view(run.by_hop, card)], run)


SECTIONS = {"accuracy": accuracy_section, "depth": depth_section, "soundness": soundness_section,
            "probing": probing_section, "logicmark": logicmark_section}


def data_line(runs: Iterable[Any]) -> str:
    """Where each test set of ``runs`` came from (their provenance's ``data``), one paragraph: real files, the
    fetched published copies, a generated stand-in or not present, so a stand-in is named before any number."""
    sources: dict[str, str] = {}
    for run in runs:
        for name, source in run.provenance.data.items():
            sources.setdefault(name, source)
    if not sources:
        return ""
    listed = "; ".join(f"{html.escape(PAPER_NAMES.get(name, name))}: {html.escape(source)}"
                       for name, source in sources.items())
    return f"<p><strong>Data</strong>: {listed}.</p>"


def write_report(made, path: str | Path) -> Path:
    """``made`` (an :class:`~finelogic.evaluate.Evaluation`) as one HTML file at ``path``; returns it."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>FineLogic evaluation: "
             f"{html.escape(', '.join(made.models))}</title>{STYLE}</head><body>",
             f"<h1>FineLogic evaluation of {html.escape(', '.join(made.models))}</h1>",
             f"<p>Profile <code>{html.escape(made.profile)}</code>, made {stamp} by <code>finelogic eval</code>. The "
             "paper's numbers (<em>Dissecting Logical Reasoning in LLMs</em>, FineLogic) are reported, not ours; "
             "every other number was measured in this run, with its 95% interval.</p>"]
    parts.append(data_line(made.runs.values()))
    if made.notes or made.skipped:
        lines = [*made.notes, *(f"{family} skipped: {why}" for family, why in made.skipped.items())]
        parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(t)}</li>" for t in lines) + "</ul>")
    for family, run in made.runs.items():
        parts.append(SECTIONS[family](run))
    parts.append("</body></html>")
    return write_text_atomic(path, "\n".join(parts))
