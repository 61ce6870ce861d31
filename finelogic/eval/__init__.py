"""Metrics of the FineLogic evaluation framework (Section 3), each a plain function over ``Problem``
records and a backend, returning tidy records.

- :mod:`finelogic.eval.extraction`: reading the final answer (``principled`` and ``paper_code_compat``).
- :mod:`finelogic.eval.accuracy`: overall benchmark accuracy (Section 3.1, Table 2) and FLD accuracy
  by proof-depth bucket (Table 5, Figure 3).
- :mod:`finelogic.eval.stats`: confidence intervals for the reported proportions.
"""
