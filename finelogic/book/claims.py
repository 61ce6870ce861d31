"""The claims page (``notebooks/08_claims.ipynb``) and the landing page's short table: the paper's findings
with the verdicts :mod:`finelogic.eval.claims` computed from our runs. Nothing here decides a verdict."""
from __future__ import annotations

import json
import math
import re

import matplotlib.pyplot as plt
import pandas as pd

from finelogic.book import figures
from finelogic.book.tables import Table, present
from finelogic.eval.claims import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, VERDICTS

#: The short verdict table's headers.
HEADERS = {"claim": "finding", "source": "in the paper", "verdict": "our verdict"}


def short_table(run) -> Table:
    """The landing page's version: finding, source and verdict only."""
    frame = run.verdicts[["claim", "source", "verdict"]]
    return present(frame, headers={k: HEADERS[k] for k in ("claim", "source", "verdict")},
                   note="Details, numbers and rules: the page “The paper's findings, tested”.")


def counts_sentence(run) -> str:
    """``"Of 11 findings, 2 are reproduced, 1 is not reproduced and 8 are inconclusive at this scale."``"""
    counts = run.counts()
    total = sum(counts.values())
    parts = [f"{counts[v]} {'is' if counts[v] == 1 else 'are'} {v}" for v in VERDICTS if counts[v]]
    if not parts:
        return "This run tested no finding."
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Of the {total} findings tested, {listed}."


#: Marker colour per verdict in the forest plot (seaborn's colour-blind palette; grey: nothing to compare).
VERDICT_COLOURS = {REPRODUCED: 2, NOT_REPRODUCED: 3, INCONCLUSIVE: 0}


def weakest_effects(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per claim, the compared difference nearest to going against it (where every difference must lie ``above``
    0, ``below`` 0 or ``within`` its margin: the lowest lower end, the highest upper end, the widest reach), and
    for accuracy gains, apart, the one against the highest cue rule; a claim with no difference gets a row without
    numbers. ``row`` is the plot's row label; ``margin`` is None unless ``within``."""
    rows = []
    for claim in verdicts.itertuples():
        effects = json.loads(getattr(claim, "effects", "[]") or "[]")
        cues = [e for e in effects if " rule" in e["label"].split(" − ")[-1] or "constant" in e["label"]]
        plain = [e for e in effects if e not in cues]
        groups = [(claim.claim, plain)] + ([(f"{claim.claim}: against the cue rules", cues)] if cues else [])
        for name, group in groups:
            e = {"label": "", "difference": math.nan, "low": math.nan, "high": math.nan, "unit": "pp"}
            if group:
                pick = {"above": lambda e: e["low"], "below": lambda e: -e["high"],
                        "within": lambda e: -max(abs(e["low"]), abs(e["high"]))}[group[0].get("wanted", "above")]
                e = min(group, key=pick)
            rows.append({"claim": claim.claim, "verdict": claim.verdict, "row": name, "label": e["label"],
                         "difference": e["difference"], "low": e["low"], "high": e["high"], "unit": e["unit"],
                         "margin": e.get("margin")})
    return pd.DataFrame(rows)


@figures.themed
def forest_figure(run, *, title: str = "The paper's findings, tested on our runs"):
    """A forest plot of the verdicts: per claim (:func:`weakest_effects`) the difference that decided it with
    its 95% interval, against 0 (no difference) and, for CSS, its equivalence margin; percentage points on
    one panel, steps (CSS) on another; colour: the verdict. Claims with nothing to compare are listed, greyed."""
    table = weakest_effects(run.verdicts)
    units = [u for u in ("pp", "steps") if (table["unit"] == u).any()]
    sizes = [int((table["unit"] == u).sum()) for u in units]
    fig, axes = figures.new_figure(len(units), 1, height=0.42 * sum(sizes) + 1.4 * len(units),
                                   gridspec_kw={"height_ratios": sizes})
    for ax, unit in zip(axes[:, 0], units):
        part = table[table["unit"] == unit].iloc[::-1].reset_index(drop=True)
        for y, row in part.iterrows():
            colour = (figures.PALETTE[VERDICT_COLOURS[row.verdict]] if row.verdict in VERDICT_COLOURS
                      else "#9a9a9a")
            if math.isnan(row.difference):
                ax.text(0, y, "nothing to compare", va="center", ha="center", color="#6a6a6a", fontsize=figures.FONT)
                continue
            ax.errorbar(row.difference, y, xerr=[[row.difference - row.low], [row.high - row.difference]], fmt="o",
                        color=colour, capsize=3, markersize=6)
            if row.margin:
                ax.fill_betweenx([y - 0.4, y + 0.4], -row.margin, row.margin, color="#d0d0d0", alpha=0.6, lw=0)
        ax.axvline(0, color="#404040", lw=1, ls="--")
        ax.set_yticks(range(len(part)), [figures.wrap(r, 44) for r in part["row"]])
        ax.set_ylim(-0.6, len(part) - 0.4)
        ax.set_xlabel("difference, percentage points" if unit == "pp" else "difference, steps (CSS)")
    handles = [plt.Line2D([], [], marker="o", ls="", color=figures.PALETTE[c], label=v)
               for v, c in VERDICT_COLOURS.items() if (table["verdict"] == v).any()]
    if (table["verdict"] == NOT_TESTABLE).any():
        handles.append(plt.Line2D([], [], marker="", ls="", label=f"{NOT_TESTABLE}: nothing to compare"))
    figures.legend_below(fig, handles, [h.get_label() for h in handles])
    fig.suptitle(title)
    counts = run.counts()
    alt = (f"Forest plot of {len(run.verdicts)} findings: for each, the difference our runs measured with its 95% "
           f"interval against zero; {', '.join(f'{n} {v}' for v, n in counts.items() if n)}.")
    return figures.finish(fig, alt=alt)


def deciding_effects(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per claim, the one compared difference nearest to going against it, its comparisons with the cue rules
    included (``cue``: whether it is one); a difference must lie ``above`` 0, ``below`` 0 or ``within`` its
    margin, and the nearest is the one with the least room: the lowest lower end, the highest upper end, the
    widest reach past the margin. A claim with nothing to compare keeps a row without numbers."""
    rows = []
    for claim in verdicts.itertuples():
        effects = json.loads(getattr(claim, "effects", "[]") or "[]")
        row = {"claim": claim.claim, "verdict": claim.verdict, "label": "", "difference": math.nan, "low": math.nan,
               "high": math.nan, "unit": "pp", "margin": None, "cue": False,
               "lacking": re.split(r" \(|, so ", str(getattr(claim, "evidence", "")).split("; ")[-1])[0]}
        if effects:
            def room(e):
                wanted = e.get("wanted", "above")
                if wanted == "below":
                    return -e["high"]
                if wanted == "within":
                    return (e.get("margin") or 0) - max(abs(e["low"]), abs(e["high"]))
                return e["low"]
            e = min(effects, key=room)
            last = e["label"].split(" − ")[-1]
            row.update(label=e["label"], difference=e["difference"], low=e["low"], high=e["high"],
                       unit=e.get("unit", "pp"), margin=e.get("margin"),
                       cue=" rule" in last or "constant" in last)
        rows.append(row)
    return pd.DataFrame(rows)


def _reason(row) -> str:
    """A few words on why a claim got its verdict, from its deciding difference."""
    if pd.isna(row.difference):
        return row.lacking or "nothing to compare in these runs"
    label = row.label.replace(" (FOLIO + Multi-LogiEval)", "")
    if row.verdict == REPRODUCED:
        return f"{label}: apart from 0 as the paper says"
    if row.verdict == NOT_REPRODUCED:
        return f"{label}: apart from 0, the other way"
    if row.cue:
        return f"{label}: a rule that does not reason scores as high"
    if row.margin is not None and pd.notna(row.margin):
        return f"{label}: reaches past ±{row.margin:.2f} steps"
    return f"{label}: the interval spans 0"


def scan_table(run) -> Table:
    """The verdicts as a reader scans them: the finding (with where the paper states it), our verdict, the
    difference that decided it with its 95% interval, and why, in a few words."""
    sources = dict(zip(run.verdicts["claim"], run.verdicts["source"]))
    rows = []
    for row in deciding_effects(run.verdicts).itertuples():
        unit = " steps" if row.unit == "steps" else " pp"
        number = ("—" if pd.isna(row.difference) else
                  f"{row.difference:+.1f} [{row.low:+.1f}, {row.high:+.1f}]{unit}".replace("-", "−"))
        rows.append({"finding": f"{row.claim} ({sources[row.claim]})", "verdict": row.verdict,
                     "deciding difference [95% CI]": number, "why": _reason(row)})
    return Table(pd.DataFrame(rows).rename(columns=lambda c: c[:1].upper() + c[1:]), notes=(
        "— nothing to compare. The deciding difference is the compared one nearest to going against the finding "
        "(pp: percentage points); every comparison, the rule and the numbers with their n: the claims page's "
        "evidence.",), numeric=("Deciding difference [95% CI]",))


def evidence_html(run) -> str:
    """Every finding's rule and numbers, one folded paragraph each (HTML, escaped): the evidence behind
    :func:`scan_table`."""
    import html

    from finelogic.eval import claims as rules

    # The paper's words as the claims are written now (a committed run keeps the words of its assembly).
    words = {c.claim: c.what_paper_says for c in vars(rules).values() if isinstance(c, rules.Claim)}
    parts = []
    for row in run.verdicts.itertuples():
        parts.append(
            f'<details class="finelogic-evidence"><summary><strong>{html.escape(row.claim)}</strong> '
            f'({html.escape(row.source)}): {html.escape(row.verdict)}</summary>'
            f'<p><em>The paper:</em> {html.escape(words.get(row.claim, row.what_paper_says))}</p>'
            f'<p><em>Rule (ours):</em> {html.escape(row.rule)}</p>'
            f'<p><em>Numbers, 95% intervals and n:</em> {html.escape(row.evidence)}</p></details>')
    return "".join(parts)
