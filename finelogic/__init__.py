"""finelogic: the companion package to *Dissecting Logical Reasoning in LLMs* (FineLogic) and LogicMark.

Layout: ``finelogic.data`` (problems, loaders, generators), ``finelogic.logic`` (formulas, z3, rules),
``finelogic.models`` (backends), ``finelogic.eval`` (metrics), ``finelogic.paper`` (the paper's reported
numbers), ``finelogic.book`` (papermill runner, tables, figures, provenance).
"""
__version__ = "0.1.0"
