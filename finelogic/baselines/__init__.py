"""Inference-time baselines of Table 2 (paper §5.1, Appendix A.2) and LogiPT-style training data:
:func:`selection_inference` (``Sel-Inf``), :func:`logic_lm` (``Logic-LM``: translate, z3 decides,
self-refinement, then direct prompting), :func:`symbcot` (``SymbCoT``: translate, plan and solve in symbols,
verify) and :func:`logipt_data` (solver-trace training examples, no model); their shared arguments and
:class:`BaselineResult` are :mod:`finelogic.baselines.common`'s. They write no file.
"""
from __future__ import annotations

from finelogic.baselines.common import BASELINE_SETTINGS, LOGIC_LM, SEL_INF, SYMBCOT, BaselineResult
from finelogic.baselines.logic_lm import logic_lm, parse_translation, solve
from finelogic.baselines.logipt import logipt_data, solver_trace
from finelogic.baselines.selection_inference import selection_inference
from finelogic.baselines.symbcot import symbcot

__all__ = ["BASELINE_SETTINGS", "LOGIC_LM", "SEL_INF", "SYMBCOT", "BaselineResult", "logic_lm", "logipt_data",
           "parse_translation", "selection_inference", "solve", "solver_trace", "symbcot"]
