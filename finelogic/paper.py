"""The numbers the FineLogic paper's Tables 1-5 and the LogicMark dataset card's results table report,
transcribed by hand; book pages show them beside the numbers this repository regenerates.

Conventions of :func:`reported`'s ``model, setting, metric, value`` rows: models as :data:`GPT4O` ... (the
paper spells them variously; LogicMark keeps the card's names); settings as Table 2 prints them, Table 4's
"–" as ``Base``, ``""`` where none is printed (Table 1, LogicMark); metrics are Table 2's dataset names,
Table 3's ``all_valid``/``all_relevant``/``all_atomic``, Table 4's ``CSS``/``RFI``/``NSD``, Table 5's step
buckets ``0-3`` ... ``16-19`` (ASCII hyphens), LogicMark's ``1-hop`` ... ``5-hop`` and ``avg``. Table 1's
``model`` is the dataset and its ``samples`` the sample count.

Where the paper's prose quotes a number that differs from its own table, the table wins: Section 5.2.1 says
Qwen SymbCoT reaches "63.8% on Multi-LogiEval" (Table 2 prints 63.9) and "22.6% on FLD, versus 44.6% with
direct prompting" (Table 2 prints 46.6 for Qwen Direct), and "As shown in Table 1" where it means Table 2.
Table 5 does not always reconcile with Table 2's FLD column (1000 step problems, 200 per bucket, plus 100
UNKNOWN): for some rows (e.g. Qwen Sel-Inf, Qwen Few-shot) the implied number of UNKNOWN problems solved falls
outside 0-100.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

GPT4O = "GPT-4o"
DEEPSEEK = "DeepSeek-R1"
LLAMA = "Llama-3.1-8B-Instruct"
QWEN = "Qwen-2.5-7B-Instruct"
#: The paper's four supervision styles (Section 4), in its order; Table 2 prints their rows ``SFT-<style>``.
STYLES = ("NL", "Symb-Struct", "Symb-Filter", "Symb-Direct")

ACCURACY = "accuracy (%)"
Row = tuple[str | float, ...]  # (model, setting, *values)


@dataclass(frozen=True)
class _Printed:
    """One printed table: where it is, its metric columns, its rows, each metric's unit if not :data:`ACCURACY`."""

    source: str
    columns: tuple[str, ...]
    rows: list[Row]
    units: Mapping[str, str] = field(default_factory=dict)


_TABLE1 = _Printed("FineLogic paper, Table 1", ("samples",), [
    ("FLD", "", 1100),
    ("FOLIO", "", 203),
    ("Multi-LogiEval", "", 390),  # printed "Multi-Logical"
    ("ProntoQA", "", 500),  # printed "Pronto-QA"
], {"samples": "problems (count)"})
# As printed: T = True, F = False.
_TABLE1_LABEL_TYPES: dict[str, tuple[str, ...]] = {"FLD": ("T", "F", "Unknown"), "FOLIO": ("T", "F", "Unknown"),
                                                   "Multi-LogiEval": ("T", "F"), "ProntoQA": ("T", "F")}

# Overall benchmark accuracy (%).
_TABLE2 = _Printed("FineLogic paper, Table 2", ("FLD", "FOLIO", "Multi-LogiEval", "ProntoQA"), [
    (GPT4O, "Direct", 53.0, 72.4, 71.0, 98.8),
    (GPT4O, "CoT", 54.1, 69.5, 76.9, 98.6),
    (GPT4O, "Few-shot", 58.3, 74.4, 84.4, 99.0),
    (GPT4O, "Logic-LM", 46.9, 72.1, 83.3, 100.0),
    (GPT4O, "SymbCoT", 47.6, 71.6, 72.1, 100.0),
    (GPT4O, "Sel-Inf", 51.9, 66.5, 84.9, 94.4),
    (DEEPSEEK, "Direct", 77.2, 75.9, 81.8, 100.0),
    (DEEPSEEK, "CoT", 77.6, 78.8, 79.0, 100.0),
    (DEEPSEEK, "Few-shot", 77.3, 81.8, 84.6, 99.4),
    (DEEPSEEK, "Logic-LM", 69.6, 77.5, 81.2, 96.4),
    (DEEPSEEK, "SymbCoT", 69.6, 82.8, 72.0, 98.2),
    (DEEPSEEK, "Sel-Inf", 83.8, 85.2, 73.1, 96.0),
    (LLAMA, "Direct", 31.7, 54.7, 40.5, 64.6),
    (LLAMA, "CoT", 29.3, 50.7, 44.6, 63.8),
    (LLAMA, "Few-shot", 41.0, 46.5, 59.4, 48.9),
    (LLAMA, "Logic-LM", 38.3, 52.5, 44.4, 77.6),
    (LLAMA, "SymbCoT", 38.1, 58.8, 46.3, 78.8),
    (LLAMA, "Sel-Inf", 48.5, 47.5, 55.2, 64.2),
    (LLAMA, "LogiPT", 53.3, 61.7, 57.9, 76.4),
    (LLAMA, "SFT-NL", 67.5, 57.1, 71.3, 99.6),
    (LLAMA, "SFT-Symb-Struct", 63.2, 56.2, 59.7, 99.8),
    (LLAMA, "SFT-Symb-Filter", 66.7, 54.7, 50.8, 91.0),
    (LLAMA, "SFT-Symb-Direct", 52.8, 48.3, 53.9, 98.8),
    (QWEN, "Direct", 46.6, 61.1, 37.0, 90.6),
    (QWEN, "CoT", 50.4, 65.5, 54.3, 90.4),
    (QWEN, "Few-shot", 53.2, 68.5, 61.3, 91.1),
    (QWEN, "Logic-LM", 46.6, 69.1, 27.1, 85.8),
    (QWEN, "SymbCoT", 22.6, 57.5, 63.9, 87.0),
    (QWEN, "Sel-Inf", 49.0, 62.6, 39.7, 92.6),
    (QWEN, "LogiPT", 58.6, 61.7, 55.6, 52.4),
    (QWEN, "SFT-NL", 71.0, 62.6, 64.3, 97.4),
    (QWEN, "SFT-Symb-Struct", 54.6, 50.7, 57.7, 83.8),
    (QWEN, "SFT-Symb-Filter", 54.7, 55.7, 61.0, 96.0),
    (QWEN, "SFT-Symb-Direct", 54.8, 53.2, 58.7, 61.4),
])

# Stepwise soundness: % of samples whose every step passes.
_TABLE3 = _Printed("FineLogic paper, Table 3", ("all_valid", "all_relevant", "all_atomic"), [
    (GPT4O, "Few-shot", 7.6, 56.2, 4.4),
    (DEEPSEEK, "Few-shot", 13.1, 33.8, 5.7),  # printed "Deepseek-R1"
    (LLAMA, "Few-shot", 4.5, 17.4, 1.6),
    (LLAMA, "LogiPT", 5.2, 28.5, 4.9),
    (LLAMA, "SFT-NL", 40.9, 8.5, 13.0),
    (LLAMA, "SFT-Symb-Struct", 35.0, 15.4, 24.7),
    (LLAMA, "SFT-Symb-Filter", 21.8, 16.9, 12.4),
    (LLAMA, "SFT-Symb-Direct", 33.7, 10.2, 25.1),
    (QWEN, "Few-shot", 10.1, 35.1, 2.6),
    (QWEN, "LogiPT", 6.4, 39.8, 5.3),
    (QWEN, "SFT-NL", 27.6, 5.4, 8.5),
    (QWEN, "SFT-Symb-Struct", 35.3, 9.1, 19.8),
    (QWEN, "SFT-Symb-Filter", 16.7, 11.7, 10.5),
    (QWEN, "SFT-Symb-Direct", 19.7, 0.3, 11.9),
], {"all_valid": "% of samples whose every step is valid",
    "all_relevant": "% of samples whose every step is relevant",
    "all_atomic": "% of samples whose every step is atomic"})

# Representation-level probing. The paper does not define these units (Section 3.3); these are the released code's.
_TABLE4 = _Printed("FineLogic paper, Table 4", ("CSS", "RFI", "NSD"), [
    (LLAMA, "Base", 8.0, 9.9, 32.0),  # printed "–": the original model
    (LLAMA, "LogiPT", 8.1, 0.7, 44.2),
    (LLAMA, "SFT-NL", 8.5, 9.9, 51.5),
    (LLAMA, "SFT-Symb-Struct", 8.7, 11.1, 36.1),
    (LLAMA, "SFT-Symb-Filter", 9.7, 11.1, 46.4),
    (LLAMA, "SFT-Symb-Direct", 9.0, 18.5, 41.2),
    (QWEN, "Base", 8.6, 7.4, 43.3),
    (QWEN, "LogiPT", 8.1, 9.2, 43.2),
    (QWEN, "SFT-NL", 8.2, 16.0, 44.3),
    (QWEN, "SFT-Symb-Struct", 8.5, 14.8, 43.3),
    (QWEN, "SFT-Symb-Filter", 8.3, 16.0, 45.4),
    (QWEN, "SFT-Symb-Direct", 8.6, 18.5, 43.3),
], {"CSS": "steps (mean correctness span; released code: src/probing.py)",
    "RFI": "% of test problems with every candidate-fact row classified correctly (released code: src/probing.py)",
    "NSD": "% of test problems with every candidate-step row classified correctly (released code: src/probing.py)"})

# FLD accuracy (%) by proof-depth bucket.
_TABLE5 = _Printed("FineLogic paper, Table 5 (Appendix C)", ("0-3", "4-7", "8-11", "12-15", "16-19"), [
    (GPT4O, "Direct", 78.5, 63.0, 43.0, 46.5, 35.5),
    (GPT4O, "CoT", 82.0, 62.0, 56.5, 44.0, 46.5),
    (GPT4O, "Few-shot", 81.5, 68.5, 53.5, 46.0, 47.0),
    (GPT4O, "Logic-LM", 68.4, 52.1, 31.5, 28.2, 22.8),
    (GPT4O, "SymbCoT", 69.9, 52.5, 32.0, 26.5, 24.5),
    (GPT4O, "Sel-Inf", 64.5, 55.5, 49.5, 49.0, 55.5),
    (DEEPSEEK, "Direct", 92.5, 86.0, 80.5, 75.0, 76.5),
    (DEEPSEEK, "CoT", 92.0, 86.0, 78.0, 77.5, 73.5),
    (DEEPSEEK, "Few-shot", 89.0, 85.0, 80.5, 69.0, 71.0),
    (DEEPSEEK, "Logic-LM", 91.4, 78.6, 64.8, 58.2, 52.4),
    (DEEPSEEK, "SymbCoT", 86.4, 80.5, 70.9, 45.2, 53.4),
    (DEEPSEEK, "Sel-Inf", 93.0, 88.0, 84.5, 79.0, 75.5),
    (LLAMA, "Direct", 40.5, 30.0, 24.0, 27.0, 25.5),
    (LLAMA, "CoT", 41.5, 32.0, 29.0, 24.0, 19.5),
    (LLAMA, "Few-shot", 49.5, 45.5, 33.0, 39.0, 32.0),
    (LLAMA, "Logic-LM", 56.4, 41.3, 32.6, 28.8, 26.2),
    (LLAMA, "SymbCoT", 57.8, 41.0, 39.0, 37.8, 35.4),
    (LLAMA, "Sel-Inf", 63.5, 55.5, 52.5, 45.0, 42.0),
    (LLAMA, "LogiPT", 72.5, 53.5, 51.0, 35.0, 37.0),
    (LLAMA, "SFT-NL", 89.5, 72.5, 52.0, 56.5, 46.0),
    (LLAMA, "SFT-Symb-Struct", 88.5, 78.5, 65.0, 66.0, 58.5),
    (LLAMA, "SFT-Symb-Filter", 72.0, 73.0, 67.5, 72.0, 62.5),
    (LLAMA, "SFT-Symb-Direct", 81.0, 58.5, 48.5, 38.5, 27.5),
    (QWEN, "Direct", 69.0, 45.5, 45.0, 38.5, 36.0),
    (QWEN, "CoT", 70.5, 55.5, 36.5, 42.5, 40.5),
    (QWEN, "Few-shot", 63.0, 44.0, 33.5, 27.0, 33.0),
    (QWEN, "Logic-LM", 68.7, 51.2, 31.4, 26.0, 29.2),
    (QWEN, "SymbCoT", 52.3, 39.5, 30.7, 28.1, 19.9),
    (QWEN, "Sel-Inf", 49.0, 26.5, 29.5, 27.0, 24.5),
    (QWEN, "LogiPT", 80.5, 74.0, 64.0, 68.0, 57.5),
    (QWEN, "SFT-NL", 93.5, 78.5, 67.5, 66.5, 52.5),
    (QWEN, "SFT-Symb-Struct", 74.5, 65.5, 50.0, 43.0, 34.0),
    (QWEN, "SFT-Symb-Filter", 68.0, 59.5, 48.0, 51.5, 45.0),
    (QWEN, "SFT-Symb-Direct", 82.0, 60.0, 51.5, 42.5, 37.0),
])

# Log-likelihood multiple-choice accuracy (%) by hop depth. The card's "GPT-X2-125M (unreleased *for now*)"
# is named "GPT-X2-125M" (the note is no name); its bold marks (column best) are dropped.
_LOGICMARK = _Printed("LogicMark dataset card (AxiomicLabs/LogicMark), Benchmark Results",
                      ("1-hop", "2-hop", "3-hop", "4-hop", "5-hop", "avg"), [
    ("Qwen2.5-3B", "", 48.80, 54.90, 46.00, 42.40, 39.40, 48.64),
    ("Qwen2.5-Math-1.5B", "", 47.20, 53.65, 46.64, 45.73, 39.20, 48.62),
    ("GPT-X2-125M", "", 74.80, 51.30, 38.08, 36.53, 34.20, 46.42),
    ("Qwen2.5-1.5B", "", 52.00, 50.70, 43.68, 41.33, 38.00, 46.40),
    ("pythia-2.8B", "", 70.40, 49.60, 35.84, 36.80, 31.40, 44.50),
    ("gpt2-xl", "", 60.40, 50.20, 36.96, 38.67, 32.60, 44.42),
    ("SmolLM2-1.7B", "", 65.00, 50.50, 36.00, 36.93, 31.20, 44.36),
    ("pythia-70m", "", 54.40, 50.90, 36.96, 38.53, 34.00, 44.22),
    ("gpt2", "", 56.00, 51.05, 36.48, 38.80, 31.00, 44.06),
    ("Qwen2.5-Coder-1.5B", "", 45.20, 48.45, 42.08, 41.07, 34.20, 44.00),
    ("GPT-X-125M", "", 57.40, 50.00, 35.28, 38.53, 31.80, 43.52),
    ("LFM2-350M-Math", "", 74.00, 46.50, 38.80, 31.33, 31.00, 43.50),
    ("pythia-31m", "", 56.40, 48.75, 35.84, 37.07, 31.80, 42.84),
    ("SmolLM2-135M", "", 58.80, 49.35, 34.80, 36.67, 29.60, 42.78),
    ("Qwen2.5-0.5B", "", 49.20, 49.40, 35.84, 38.53, 31.00, 42.52),
    ("pythia-14m", "", 68.60, 47.05, 33.44, 34.27, 29.20, 42.10),
    ("MobileLLM-125M", "", 53.20, 49.85, 34.64, 35.20, 28.40, 42.04),
    ("LFM2.5-350M-Base", "", 52.00, 49.75, 38.00, 30.67, 26.00, 41.80),
    ("pythia-160M", "", 52.80, 47.30, 33.84, 34.27, 30.40, 40.84),
])
# The card's target hop distribution; its "avg" column is the mean weighted by these shares (not the "500 per
# hop bucket" its heading says).
LOGICMARK_HOP_SHARE: Mapping[str, float] = MappingProxyType(
    {"1-hop": 0.10, "2-hop": 0.40, "3-hop": 0.25, "4-hop": 0.15, "5-hop": 0.10}
)
# The card's rows nearest to the models this repository runs (SmolLM2-135M: the embedded model's base; the
# others of about its size, or Gemma 3 270M's): the rows a page draws beside ours, in the card's spelling.
LOGICMARK_NEAREST: tuple[str, ...] = ("SmolLM2-135M", "pythia-70m", "pythia-160M", "gpt2", "Qwen2.5-0.5B")
_TABLES = {"table1": _TABLE1, "table2": _TABLE2, "table3": _TABLE3, "table4": _TABLE4, "table5": _TABLE5,
           "logicmark": _LOGICMARK}
TABLES: tuple[str, ...] = tuple(_TABLES)


def _lookup(name: str) -> _Printed:
    try:
        return _TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; valid names: {', '.join(TABLES)}") from None


def reported(name: str) -> pd.DataFrame:
    """The reported numbers of table ``name`` (one of :data:`TABLES`), one row per printed cell, in printed
    order (row by row, left to right): a new DataFrame of ``model``, ``setting``, ``metric`` (str) and
    ``value`` (float; units from :func:`unit`). Raises KeyError for an unknown name."""
    table = _lookup(name)
    records = [(model, setting, metric, float(value))
               for model, setting, *values in table.rows
               for metric, value in zip(table.columns, values, strict=True)]
    return pd.DataFrame(records, columns=["model", "setting", "metric", "value"])


def unit(name: str, metric: str | None = None) -> str:
    """The unit of ``metric`` in table ``name``; without ``metric``, the table's units in words."""
    table = _lookup(name)
    if metric is not None:
        if metric not in table.columns:
            raise KeyError(f"table {name!r} has no metric {metric!r}; it has {', '.join(table.columns)}")
        return table.units.get(metric, ACCURACY)
    units = {column: table.units.get(column, ACCURACY) for column in table.columns}
    if len(set(units.values())) == 1:
        return units[table.columns[0]]
    return "; ".join(f"{column}: {what}" for column, what in units.items())


def source(name: str) -> str:
    """A one-line citation of where table ``name``'s numbers are printed."""
    return _lookup(name).source


def table1_label_types() -> dict[str, tuple[str, ...]]:
    """Table 1's label types per dataset, as printed ("T", "F", "Unknown")."""
    return dict(_TABLE1_LABEL_TYPES)

