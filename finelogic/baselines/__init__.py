"""Inference-time baselines of Table 2 (paper §5.1, Appendix A.2), one module each, and LogiPT-style training
data (:func:`logipt_data`, no model); what they share is :mod:`finelogic.baselines.common`. They write no file.
"""
from __future__ import annotations

from finelogic.baselines.common import BASELINE_SETTINGS, LOGIC_LM, SEL_INF, SYMBCOT, BaselineResult
from finelogic.baselines.logic_lm import logic_lm, parse_translation, solve
from finelogic.baselines.logipt import logipt_data, solver_trace
from finelogic.baselines.selection_inference import selection_inference
from finelogic.baselines.symbcot import symbcot

__all__ = ["BASELINE_SETTINGS", "LOGIC_LM", "SEL_INF", "SYMBCOT", "BaselineResult", "logic_lm", "logipt_data",
           "parse_translation", "selection_inference", "solve", "solver_trace", "symbcot"]
