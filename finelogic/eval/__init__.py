"""Metrics of the FineLogic evaluation framework (Section 3), each a plain function over ``Problem``
records and a backend, returning tidy records.

- :mod:`finelogic.eval.extraction`: reading the final answer (``principled`` and ``paper_code_compat``).
- :mod:`finelogic.eval.accuracy`: overall benchmark accuracy (Section 3.1, Table 2) and FLD accuracy
  by proof-depth bucket (Table 5, Figure 3).
- :mod:`finelogic.eval.steps`, :mod:`~finelogic.eval.relevance`, :mod:`~finelogic.eval.judges`,
  :mod:`~finelogic.eval.soundness`: stepwise soundness (Section 3.2, Table 3): splitting a response into
  steps, which steps are relevant, judging validity and atomicity, and the sample-level metrics;
  :mod:`~finelogic.eval.judge_quality` measures the judges themselves.
- :mod:`finelogic.eval.probing`: representation-level probing (Section 3.3, Table 4).
- :mod:`finelogic.eval.logicmark`: LogicMark's log-likelihood multiple-choice scoring.
- :mod:`finelogic.eval.stats`: confidence intervals for the reported proportions.
"""
