"""finelogic: the companion package to *Dissecting Logical Reasoning in LLMs* (FineLogic) and LogicMark.

Layers, top to bottom (each imports only those below it): ``finelogic.book`` (papermill runner, tables,
figures, captions), ``finelogic.runs`` (one run per notebook family), ``finelogic.eval`` /
``finelogic.baselines`` / ``finelogic.sft`` (pure evaluation, baselines, supervision), ``finelogic.models``
(backends behind one cache), ``finelogic.data`` (problems, loaders, generators), ``finelogic.logic``
(formulas, proof notation, z3, rules); ``finelogic.paper`` holds the paper's reported numbers.
"""
__version__ = "0.1.0"
