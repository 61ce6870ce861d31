"""A proof's steps coloured by their verdicts (paper §3.2, a teaching view for the soundness page).

Model text is HTML-escaped (``html.escape``): a response can contain anything. Every colour is set inline,
text dark on the light row colours, so the table reads the same in the book's light and dark themes (the
dark theme would otherwise paint light text, and its inline-code pink, on the light rows).
"""
from __future__ import annotations

import html

import pandas as pd

#: verdict class -> (label, background colour)
STYLES = {
    "sound": ("valid, atomic, relevant", "#dff3d8"),
    "invalid": ("invalid", "#f8d4d4"),
    "non-atomic": ("valid, not atomic", "#fde6c4"),
    "irrelevant": ("not relevant", "#dde6f3"),
    "undecided": ("judge undecided", "#e6e6e6"),
    "skipped": ("not counted", "#f4f4f4"),
}


#: Text colour on every row (the row colours are light in both themes).
TEXT = "#1b1b1b"
CELL = f"color:{TEXT};padding:.2em .5em;border-bottom:1px solid #d0d0d0"


def verdict_class(valid, atomic, relevant) -> str:
    """The one colour a step gets: its first fault in the order undecided, invalid, non-atomic, irrelevant."""
    if relevant is None or pd.isna(relevant):
        return "skipped"
    if valid is None or pd.isna(valid):
        return "undecided"
    if not valid:
        return "invalid"
    if not atomic:
        return "non-atomic"
    return "sound" if relevant else "irrelevant"


def _faults(valid, atomic, relevant) -> str:
    kind = verdict_class(valid, atomic, relevant)
    if kind in ("skipped", "undecided"):
        return STYLES[kind][0]
    parts = ["valid" if valid else "invalid"]
    if valid:
        parts.append("atomic" if atomic else "not atomic")
    parts.append("relevant" if relevant else "not relevant")
    return ", ".join(parts)


def step_view_html(steps: pd.DataFrame, *, title: str = "") -> str:
    """An HTML table of one response's judged steps (rows of :func:`finelogic.eval.soundness.judge_responses`
    for one sample), each row coloured by :func:`verdict_class`, with the judge's reason."""
    rows = []
    for row in steps[steps["step"] >= 0].itertuples():
        kind = verdict_class(row.valid, row.atomic, row.relevant)
        rows.append(
            f'<tr style="background:{STYLES[kind][1]};color:{TEXT}"><td style="{CELL}">{int(row.step) + 1}</td>'
            f'<td style="{CELL}"><code style="white-space:pre-wrap;color:{TEXT};background:transparent">'
            f"{html.escape(str(row.raw))}</code></td>"
            f'<td style="{CELL}">{html.escape(_faults(row.valid, row.atomic, row.relevant))}</td>'
            f'<td style="{CELL}">{html.escape(str(row.reason or ""))}</td></tr>'
        )
    if not rows:
        rows.append(f'<tr style="background:#ffffff;color:{TEXT}"><td colspan="4" style="{CELL}">'
                    "no steps: the response is empty</td></tr>")
    legend = " ".join(f'<span style="background:{c};color:{TEXT};padding:0 .4em">{html.escape(label)}</span>'
                      for label, c in STYLES.values())
    heading = f"<p><strong>{html.escape(title)}</strong></p>" if title else ""
    header = "".join(f'<th style="{CELL};background:#ececec">{h}</th>'
                     for h in ("#", "step", "verdict", "reason"))
    return (f'{heading}<table class="step-view" style="color:{TEXT};border-collapse:collapse">'
            f'<thead><tr style="color:{TEXT}">{header}</tr></thead><tbody>{"".join(rows)}</tbody></table><p>{legend}</p>')
