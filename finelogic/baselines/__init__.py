"""Inference-time baselines of Table 2 (paper §5.1, Appendix A.2) and LogiPT-style training data.

- :func:`selection_inference` (``Sel-Inf``): alternating selection and inference prompts, then an answer;
  the derivation is an FLD-style proof the soundness judges read.
- :func:`logic_lm` (``Logic-LM``): the model translates into our formula notation, z3 decides, errors go
  back for self-refinement, then a fallback to direct prompting.
- :func:`symbcot` (``SymbCoT``): translate, plan and solve in symbols, verify.
- :func:`logipt_data`: solver-trace training examples for the SFT trainer (no model involved).

Each baseline takes problems and any backend and returns accuracy records with the columns of
:func:`finelogic.eval.accuracy.evaluate_accuracy`; :func:`run_baseline` picks one by its printed name.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from finelogic.baselines.common import BASELINE_SETTINGS, LOGIC_LM, SEL_INF, SYMBCOT, read_traces, run_name_for
from finelogic.baselines.logic_lm import logic_lm, parse_translation, solve
from finelogic.baselines.logipt import logipt_data, solver_trace
from finelogic.baselines.selection_inference import selection_inference
from finelogic.baselines.symbcot import symbcot
from finelogic.data.problem import Problem
from finelogic.models.base import Backend, GenerationConfig

#: Printed setting name -> baseline function.
BASELINES = {SEL_INF: selection_inference, LOGIC_LM: logic_lm, SYMBCOT: symbcot}


def run_baseline(name: str, problems: Sequence[Problem], backend: Backend, *,
                 config: GenerationConfig | None = None, profile: str | None = "tiny",
                 model_name: str | None = None, run_name: str | None = None, policy: str = "principled",
                 **options: Any) -> pd.DataFrame:
    """Run the baseline the paper's tables call ``name`` (``Sel-Inf``, ``Logic-LM``, ``SymbCoT``).

    ``options`` go to that baseline (``rounds=`` for Sel-Inf, ``refinements=`` for Logic-LM); the other
    arguments are as in :func:`selection_inference`. Returns its accuracy records.
    """
    try:
        baseline = BASELINES[name]
    except KeyError:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}") from None
    return baseline(problems, backend, config, policy=policy, profile=profile, run_name=run_name,
                    model_name=model_name, **options)


__all__ = ["BASELINES", "BASELINE_SETTINGS", "logic_lm", "logipt_data", "parse_translation", "read_traces",
           "run_baseline", "run_name_for", "selection_inference", "solve", "solver_trace", "symbcot"]
