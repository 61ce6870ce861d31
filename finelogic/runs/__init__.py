"""One module per notebook family (:data:`finelogic.runs.registry.FAMILIES` lists them), each exporting
``run(profile, *, seed=0, backends=None, **overrides)``; what they share: their result files
(:mod:`~finelogic.runs.results`), provenance (:mod:`~finelogic.runs.provenance`), models
(:mod:`~finelogic.runs.backends`), upstream runs (:mod:`~finelogic.runs.upstream`) and profile resolution
(:mod:`~finelogic.runs.base`). Import one as ``from finelogic.runs import accuracy``.
"""
