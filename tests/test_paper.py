"""Specification of finelogic.paper: the paper's and the LogicMark card's reported numbers.

The seed texts in ../shared/seeds are the oracle: every transcribed row is compared with the row
printed there (tests skip when the seeds are absent).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from finelogic import paper

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"

MODELS = {"GPT-4o", "DeepSeek-R1", "Llama-3.1-8B-Instruct", "Qwen-2.5-7B-Instruct"}
SETTINGS = {
    "Direct", "CoT", "Few-shot", "Logic-LM", "SymbCoT", "Sel-Inf", "LogiPT",
    "SFT-NL", "SFT-Symb-Struct", "SFT-Symb-Filter", "SFT-Symb-Direct", "Base",
}  # fmt: skip
EXPECTED_CELLS = {
    "table1": 4,
    "table2": 136,  # 34 model x setting rows x 4 datasets
    "table3": 42,  # 14 x 3
    "table4": 36,  # 12 x 3
    "table5": 170,  # 34 x 5 buckets
    "logicmark": 114,  # 19 models x 6
}

# ---- the seed texts as oracle -----------------------------------------------------------------

SeedRow = tuple[str, str, tuple[float, ...]]  # (canonical model, setting, values)

# Printed header or setting spellings -> this package's names.
PRINTED_NAMES = {
    "All Valid": "all_valid",
    "All Relevant": "all_relevant",
    "All Atomic": "all_atomic",
    "Avg": "avg",
    "–": "Base",  # Table 4: the original model
}
PAPER_CAPTIONS = {name: f"Table {name[-1]}:" for name in ("table2", "table3", "table4", "table5")}


def canonical_model(name: str) -> str:
    """Model names compare without case and whitespace: PDF extraction splits 'Llama-3.1- 8B'."""
    return re.sub(r"\s+", "", name).lower()


def printed_name(text: str) -> str:
    """A printed column or setting name in this package's spelling."""
    text = text.strip()
    if text in PRINTED_NAMES:
        return PRINTED_NAMES[text]
    return re.sub(r"-\s+", "-", text).replace("–", "-")  # "Multi- LogiEval", "0–3"


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def seed_text(filename: str) -> str:
    path = SEEDS / filename
    if not path.exists():
        pytest.skip(f"seed text {path} is not present")
    return path.read_text(encoding="utf-8")


def paper_table(caption: str) -> tuple[list[str], list[SeedRow]]:
    """Metric names and rows of the tab-separated paper table just above the line ``caption``.

    Each group of rows names its model once: on its first row (Tables 3, 4) or on its last row
    (Tables 2, 5); the other rows leave the model field empty.
    """
    lines = seed_text("finelogic_paper.txt").splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(caption))
    start = max(i for i in range(end) if lines[i].startswith("Model\tSetting"))
    block = [line.split("\t") for line in lines[start:end] if line.strip()]
    data = [fields for fields in block if is_number(fields[-1])]
    header = [fields for fields in block if not is_number(fields[-1])][-1]
    metrics = [printed_name(field) for field in header[2:]]

    models = [fields[0].strip() for fields in data]
    if models[0]:  # leading names: carry each forward
        for i in range(1, len(models)):
            models[i] = models[i] or models[i - 1]
    else:  # trailing names: carry each backward
        for i in range(len(models) - 2, -1, -1):
            models[i] = models[i] or models[i + 1]
    rows = [
        (canonical_model(model), printed_name(fields[1]), tuple(float(v) for v in fields[2:]))
        for model, fields in zip(models, data, strict=True)
    ]
    return metrics, rows


def logicmark_table() -> tuple[list[str], list[SeedRow], dict[str, str]]:
    """Metric names, rows and Params column of the card's 'Benchmark Results' markdown table."""
    text = seed_text("logicmark_card.txt")
    section = text.split("## Benchmark Results", 1)[1].split("## Task Format", 1)[0]
    table = [
        [cell.strip().replace("**", "") for cell in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("|")
    ]
    header, body = table[0], [cells for cells in table[1:] if not set(cells[0]) <= set("- ")]
    metrics = [printed_name(cell) for cell in header[2:]]
    rows, params = [], {}
    for cells in body:
        model = re.sub(r"\s*\(.*\)$", "", cells[0])  # "GPT-X2-125M (unreleased *for now*)"
        params[model] = cells[1]
        values = tuple(float(cell.rstrip("%")) for cell in cells[2:])
        rows.append((canonical_model(model), "", values))
    return metrics, rows, params


def seed_table(name: str) -> tuple[list[str], list[SeedRow]]:
    if name == "logicmark":
        metrics, rows, _ = logicmark_table()
        return metrics, rows
    return paper_table(PAPER_CAPTIONS[name])


def transcribed_rows(name: str) -> tuple[list[str], list[SeedRow]]:
    """The module's long table folded back into printed rows (model, setting, values)."""
    df = paper.reported(name)
    metrics = list(dict.fromkeys(df.metric))
    rows = [
        (canonical_model(group.model.iloc[0]), group.setting.iloc[0], tuple(group.value))
        for _, group in df.groupby(df.index // len(metrics))
    ]
    return metrics, rows


# ---- every transcribed row against the printed one --------------------------------------------


@pytest.mark.parametrize("name", ["table2", "table3", "table4", "table5", "logicmark"])
def test_every_transcribed_row_matches_the_printed_row(name: str) -> None:
    printed_metrics, printed = seed_table(name)
    metrics, rows = transcribed_rows(name)
    assert metrics == printed_metrics
    assert len(rows) == len(printed)
    for row, printed_row in zip(rows, printed, strict=True):
        assert row == printed_row


def test_the_seed_helper_reads_continuation_rows_and_split_names() -> None:
    _, table3 = paper_table("Table 3:")
    assert table3[3] == ("llama-3.1-8b-instruct", "LogiPT", (5.2, 28.5, 4.9))  # continuation row
    _, table5 = paper_table("Table 5:")
    assert table5[6] == ("deepseek-r1", "Direct", (92.5, 86.0, 80.5, 75.0, 76.5))  # name below
    _, table4 = paper_table("Table 4:")
    assert table4[6][:2] == ("qwen-2.5-7b-instruct", "Base")


def test_table1_matches_the_printed_table() -> None:
    lines = seed_text("finelogic_paper.txt").splitlines()
    start = lines.index("Dataset\tSamples\tLabel Types")
    printed = [line.split("\t") for line in lines[start + 1 : start + 5]]
    aliases = {"Multi-Logical": "Multi-LogiEval", "Pronto-QA": "ProntoQA"}
    names = [aliases.get(n.split(" (")[0], n.split(" (")[0]) for n, _, _ in printed]
    df = paper.reported("table1")
    assert list(df.model) == names
    assert list(df.value) == [float(samples) for _, samples, _ in printed]
    labels = paper.table1_label_types()
    assert [labels[name] for name in names] == [
        tuple(label.strip() for label in types.strip("{}").split(",")) for _, _, types in printed
    ]


# ---- shape and conventions --------------------------------------------------------------------


def test_tables_lists_the_six_names() -> None:
    assert paper.TABLES == ("table1", "table2", "table3", "table4", "table5", "logicmark")


@pytest.mark.parametrize(("name", "cells"), EXPECTED_CELLS.items())
def test_each_table_has_one_row_per_printed_cell(name: str, cells: int) -> None:
    df = paper.reported(name)
    assert list(df.columns) == ["model", "setting", "metric", "value"]
    assert df.value.dtype == "float64"
    assert len(df) == cells


@pytest.mark.parametrize("name", paper.TABLES)
def test_no_cell_is_reported_twice(name: str) -> None:
    df = paper.reported(name)
    assert not df.duplicated(["model", "setting", "metric"]).any()


@pytest.mark.parametrize("name", paper.TABLES)
def test_values_are_finite_and_within_their_unit(name: str) -> None:
    df = paper.reported(name)
    for metric, values in df.groupby("metric").value:
        assert all(math.isfinite(v) for v in values)
        unit = paper.unit(name, metric)
        if "%" in unit:
            assert values.between(0, 100).all(), (metric, unit)
        elif unit.startswith("steps"):  # CSS probes use FLD problems of 10-20 steps
            assert values.between(0, 20).all()
        else:
            assert unit == "problems (count)"
            assert (values > 0).all() and (values == values.round()).all()


def test_model_and_setting_names_follow_the_conventions() -> None:
    for name in ("table2", "table3", "table5"):
        df = paper.reported(name)
        assert set(df.model) == MODELS
        assert set(df.setting) <= SETTINGS - {"Base"}
    table4 = paper.reported("table4")
    assert set(table4.model) == {"Llama-3.1-8B-Instruct", "Qwen-2.5-7B-Instruct"}
    assert set(table4.setting) <= SETTINGS
    assert list(table4.setting[table4.metric == "CSS"])[:2] == ["Base", "LogiPT"]
    assert set(paper.reported("table1").model) == {"FLD", "FOLIO", "Multi-LogiEval", "ProntoQA"}
    for name in ("table1", "logicmark"):
        assert set(paper.reported(name).setting) == {""}


def test_metric_names_follow_the_conventions() -> None:
    def metrics(name: str) -> list[str]:
        return list(dict.fromkeys(paper.reported(name).metric))

    assert metrics("table1") == ["samples"]
    assert metrics("table2") == ["FLD", "FOLIO", "Multi-LogiEval", "ProntoQA"]
    assert metrics("table3") == ["all_valid", "all_relevant", "all_atomic"]
    assert metrics("table4") == ["CSS", "RFI", "NSD"]
    assert metrics("table5") == ["0-3", "4-7", "8-11", "12-15", "16-19"]
    assert metrics("logicmark") == ["1-hop", "2-hop", "3-hop", "4-hop", "5-hop", "avg"]


def test_table5_breaks_down_the_same_rows_as_table2() -> None:
    def row_keys(name: str) -> list[tuple[str, str]]:
        df = paper.reported(name)
        return list(dict.fromkeys(zip(df.model, df.setting, strict=True)))

    assert row_keys("table5") == row_keys("table2")
    assert len(row_keys("table2")) == 34


def test_logicmark_avg_is_the_hop_share_weighted_mean() -> None:
    df = paper.reported("logicmark").pivot(index="model", columns="metric", values="value")
    weighted = sum(df[hop] * share for hop, share in paper.LOGICMARK_HOP_SHARE.items())
    assert sum(paper.LOGICMARK_HOP_SHARE.values()) == pytest.approx(1.0)
    assert (weighted - df["avg"]).abs().max() < 0.01  # both printed to 0.01


# ---- hand-checked cells ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "model", "setting", "metric", "value"),
    [
        ("table1", "FLD", "", "samples", 1100.0),
        ("table1", "Multi-LogiEval", "", "samples", 390.0),
        ("table2", "GPT-4o", "Sel-Inf", "FLD", 51.9),
        ("table2", "DeepSeek-R1", "Logic-LM", "ProntoQA", 96.4),
        ("table2", "Llama-3.1-8B-Instruct", "SFT-NL", "Multi-LogiEval", 71.3),
        ("table2", "Qwen-2.5-7B-Instruct", "Logic-LM", "Multi-LogiEval", 27.1),
        ("table2", "GPT-4o", "Logic-LM", "ProntoQA", 100.0),
        ("table3", "Llama-3.1-8B-Instruct", "SFT-NL", "all_valid", 40.9),
        ("table3", "Qwen-2.5-7B-Instruct", "SFT-Symb-Direct", "all_relevant", 0.3),
        ("table3", "DeepSeek-R1", "Few-shot", "all_atomic", 5.7),
        ("table4", "Llama-3.1-8B-Instruct", "Base", "NSD", 32.0),
        ("table4", "Llama-3.1-8B-Instruct", "SFT-Symb-Filter", "CSS", 9.7),
        ("table4", "Qwen-2.5-7B-Instruct", "SFT-Symb-Direct", "RFI", 18.5),
        ("table5", "Llama-3.1-8B-Instruct", "SFT-Symb-Filter", "16-19", 62.5),
        ("table5", "GPT-4o", "Direct", "0-3", 78.5),
        ("table5", "Qwen-2.5-7B-Instruct", "SFT-NL", "0-3", 93.5),
        ("logicmark", "SmolLM2-135M", "", "5-hop", 29.6),
        ("logicmark", "GPT-X2-125M", "", "1-hop", 74.8),
        ("logicmark", "Qwen2.5-3B", "", "avg", 48.64),
    ],
)
def test_hand_checked_cell(name: str, model: str, setting: str, metric: str, value: float) -> None:
    df = paper.reported(name)
    cell = df[(df.model == model) & (df.setting == setting) & (df.metric == metric)]
    assert list(cell.value) == [value]


def test_table1_label_types_as_printed() -> None:
    assert paper.table1_label_types() == {
        "FLD": ("T", "F", "Unknown"),
        "FOLIO": ("T", "F", "Unknown"),
        "Multi-LogiEval": ("T", "F"),
        "ProntoQA": ("T", "F"),
    }


# ---- API behaviour ---------------------------------------------------------------------------


def test_each_call_returns_a_fresh_frame() -> None:
    first = paper.reported("table2")
    first.loc[0, "value"] = -1.0
    first.loc[1, "model"] = "someone else"
    again = paper.reported("table2")
    assert again.loc[0, "value"] == 53.0
    assert len(again) == 136
    paper.table1_label_types()["FLD"] = ()
    assert paper.table1_label_types()["FLD"] == ("T", "F", "Unknown")


def test_unknown_table_raises_key_error_listing_the_valid_names() -> None:
    for call in (paper.reported, paper.unit, paper.source):
        with pytest.raises(KeyError) as error:
            call("table6")
        assert all(name in str(error.value) for name in paper.TABLES)


def test_sources_cite_the_printed_table() -> None:
    assert paper.source("table2") == "FineLogic paper, Table 2"
    assert paper.source("table5") == "FineLogic paper, Table 5 (Appendix C)"
    assert paper.source("logicmark").startswith("LogicMark dataset card")


def test_units_per_table_and_metric() -> None:
    assert paper.unit("table2") == "accuracy (%)"
    assert paper.unit("table5", "16-19") == "accuracy (%)"
    assert paper.unit("table1") == "problems (count)"
    # The paper does not define Table 4's units; the released code does, and the unit says so.
    assert paper.unit("table4", "CSS") == "steps (mean correctness span; released code: src/probing.py)"
    assert paper.unit("table4", "NSD").startswith("% of test problems")
    assert all("released code: src/probing.py" in paper.unit("table4", m) for m in ("CSS", "RFI", "NSD"))
    assert paper.unit("table3", "all_valid") == "% of samples whose every step is valid"
    assert paper.unit("table4").startswith("CSS: steps")  # mixed units are spelled out
    with pytest.raises(KeyError, match="CSS"):
        paper.unit("table4", "FLD")


def test_reported_frames_concatenate_into_one_tidy_table() -> None:
    combined = pd.concat(
        [paper.reported(name).assign(table=name) for name in paper.TABLES], ignore_index=True
    )
    assert len(combined) == sum(EXPECTED_CELLS.values())
    assert not combined.duplicated(["table", "model", "setting", "metric"]).any()


def test_the_nearest_logicmark_rows_are_card_rows_with_their_numbers():
    from finelogic.paper import LOGICMARK_NEAREST

    card = paper.reported("logicmark")
    nearest = card[card["model"].isin(LOGICMARK_NEAREST)]
    assert sorted(set(nearest["model"])) == sorted(LOGICMARK_NEAREST)
    smollm = nearest[nearest["model"] == "SmolLM2-135M"].set_index("metric")["value"]
    assert (smollm["1-hop"], smollm["avg"]) == (58.80, 42.78)
