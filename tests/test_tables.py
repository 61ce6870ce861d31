"""The book's one table style (``finelogic.book.tables.present``): what a reader sees in every table."""
from __future__ import annotations

import numpy as np
import pandas as pd

from finelogic.book.tables import MISSING, human, interval, present


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"model": ["SmolLM2", "SmolLM2"], "setting": ["Direct", "CoT"],
                         "all_valid": [12.345, np.nan], "low": [8.06, 1.0], "high": [17.0, 2.0],
                         "paper": [np.nan, 50.0], "n": [33, 4], "loss_first": [2.3125, 1.0]}
                        ).set_index(["model", "setting"])


def test_headers_are_words_not_snake_case_and_the_index_becomes_plain_columns():
    table = present(_frame(), percent=["paper"], intervals={"all_valid": ("low", "high")})
    assert list(table.frame.columns) == ["Model", "Setting", "All valid", "Paper", "n", "Loss first"]
    assert table.frame["Model"].tolist() == ["SmolLM2", "SmolLM2"]
    assert human("all_relevant") == "All relevant" and human(("FLD", "ours")) == "FLD Ours" and human("n") == "n"


def test_headers_can_be_named_explicitly():
    table = present(_frame(), headers={"all_valid": "All valid (%)", "n": "items"})
    assert "All valid (%)" in table.frame.columns and "items" in table.frame.columns


def test_one_interval_format_and_one_decimal_for_percentages():
    table = present(_frame(), percent=["paper"], intervals={"all_valid": ("low", "high")})
    assert table.frame["All valid"].tolist() == ["12.3 [8.1, 17.0]", MISSING]
    assert table.frame["Paper"].tolist() == [MISSING, "50.0"]
    assert table.frame["n"].tolist() == ["33", "4"]
    assert table.frame["Loss first"].tolist() == ["2.31", "1.00"]
    assert interval(100, 87.1, 100) == "100.0 [87.1, 100.0]" and interval(40.0, np.nan, np.nan) == "40.0"


def test_every_form_of_missing_value_prints_as_one_mark_with_a_footnote_saying_why():
    frame = pd.DataFrame({"a": [np.nan, None, "", "–", "n/a", "x"], "b": [1.0, 2.0, 3.0, 4.0, np.nan, 6.0]})
    table = present(frame, missing="the dataset is not present (no files)", digits={"b": 1})
    assert table.frame["A"].tolist() == [MISSING] * 5 + ["x"]
    assert table.frame["B"].tolist() == ["1.0", "2.0", "3.0", "4.0", MISSING, "6.0"]
    assert table.notes == (f"{MISSING} the dataset is not present (no files)",)


def test_no_footnote_without_a_missing_value_and_the_note_is_kept():
    table = present(pd.DataFrame({"x": [1, 2]}), note="Accuracy in %.")
    assert table.notes == ("Accuracy in %.",)


def test_html_has_no_index_column_no_nan_and_never_breaks_a_word_or_number():
    html = present(_frame(), percent=["paper"], intervals={"all_valid": ("low", "high")},
                   missing="the paper has no such row")._repr_html_()
    assert "NaN" not in html and "nan" not in html.lower().replace("nan-", "")
    assert html.count("<th>") == 6  # Model, Setting, All valid, Paper, n, Loss first: no index header
    assert "overflow-wrap:anywhere" not in html and "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}" in html
    # A model name (one word, or the first column) and an interval stay on one line.
    assert '<td class="nw">SmolLM2</td>' in html and "the paper has no such row" in html
    assert ".fl-table td.nw{white-space:nowrap}" in html


def test_cells_are_escaped_text_and_booleans_read_yes_no():
    table = present(pd.DataFrame({"text": ["<b>x</b>"], "ok": [True]}))
    assert table.frame["Ok"].tolist() == ["yes"]
    assert "&lt;b&gt;x&lt;/b&gt;" in table._repr_html_()


def test_an_unnamed_index_keeps_its_labels_under_a_blank_header():
    table = present(pd.DataFrame({"score": [0.5, 0.25]}, index=["A", "B"]), digits={"score": 3})
    assert list(table.frame.columns) == ["", "Score"]
    assert table.frame.values.tolist() == [["A", "0.500"], ["B", "0.250"]]


def test_halves_round_up_the_same_in_every_table_and_interval():
    """71.25 and 61.25 print as 71.3 and 61.3 (not by the float's binary value, which gives 71.2 beside 43.8)."""
    from finelogic.eval.stats import one_decimal

    frame = pd.DataFrame({"setting": ["a", "b"], "acc": [71.25, 43.75], "low": [60.25, 33.35], "high": [80.05, 54.65]})
    shown = present(frame, intervals={"acc": ("low", "high")}).frame
    assert shown["Acc"].tolist() == ["71.3 [60.3, 80.1]", "43.8 [33.4, 54.7]"]
    assert [one_decimal(v) for v in (61.25, 33.85, 0.05, 100.0)] == ["61.3", "33.9", "0.1", "100.0"]
