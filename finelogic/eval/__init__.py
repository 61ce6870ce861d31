"""Metrics of the FineLogic evaluation framework (Section 3), each a plain function over ``Problem``
records and a backend, returning tidy records: answers (:mod:`~finelogic.eval.extraction`), accuracy
(:mod:`~finelogic.eval.accuracy`; Section 3.1, Tables 2 and 5), stepwise soundness
(:mod:`~finelogic.eval.steps`, :mod:`~finelogic.eval.relevance`, :mod:`~finelogic.eval.judges`,
:mod:`~finelogic.eval.soundness`; Section 3.2, Table 3) and the judges' own quality
(:mod:`~finelogic.eval.judge_quality`), probing (:mod:`~finelogic.eval.probing`; Section 3.3, Table 4),
LogicMark (:mod:`~finelogic.eval.logicmark`) and intervals (:mod:`~finelogic.eval.stats`).
"""
