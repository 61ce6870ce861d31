"""One module per notebook family (:data:`finelogic.runs.registry.FAMILIES` lists them), each exporting
``run(profile, *, seed=0, backends=None, **overrides)``; the shared machinery (profile resolution, opening
models, provenance, write/read) is in :mod:`finelogic.runs.base`. Import one as ``from finelogic.runs import accuracy``.
"""
