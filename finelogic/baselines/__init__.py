"""Inference-time baselines of Table 2 (paper §5.1, Appendix A.2) and LogiPT-style training data.

- :func:`selection_inference` (``Sel-Inf``): alternating selection and inference prompts, then an answer;
  the derivation is an FLD-style proof the soundness judges read.
- :func:`logic_lm` (``Logic-LM``): the model translates into our formula notation, z3 decides, errors go
  back for self-refinement, then a fallback to direct prompting.
- :func:`symbcot` (``SymbCoT``): translate, plan and solve in symbols, verify.
- :func:`logipt_data`: solver-trace training examples for the SFT trainer (no model involved).

Each baseline takes problems, any backend, a decoding config and the model's name (the arguments every
baseline shares are documented once, in :mod:`finelogic.baselines.common`) and returns a
:class:`BaselineResult`: accuracy records with the columns of
:func:`finelogic.eval.accuracy.evaluate_accuracy`, and one trace per problem. They write no file;
:mod:`finelogic.runs.accuracy` runs them as settings of an accuracy run.
"""
from __future__ import annotations

from finelogic.baselines.common import BASELINE_SETTINGS, LOGIC_LM, SEL_INF, SYMBCOT, BaselineResult
from finelogic.baselines.logic_lm import logic_lm, parse_translation, solve
from finelogic.baselines.logipt import logipt_data, solver_trace
from finelogic.baselines.selection_inference import selection_inference
from finelogic.baselines.symbcot import symbcot

__all__ = ["BASELINE_SETTINGS", "LOGIC_LM", "SEL_INF", "SYMBCOT", "BaselineResult", "logic_lm", "logipt_data",
           "parse_translation", "selection_inference", "solve", "solver_trace", "symbcot"]
