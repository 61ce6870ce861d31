"""One module per notebook family; each exports ``run(profile, *, seed=0, backends=None, **overrides)``.

``datasets`` (Table 1), ``accuracy`` (Table 2), ``depth`` (Table 5 / Figure 3), ``soundness`` (Table 3),
``probing`` (Table 4), ``supervision`` (Figure 4 and the SFT rows), ``logicmark`` (the LogicMark card).
The shared machinery (profile resolution, opening models, provenance, write/read) is in
:mod:`finelogic.runs.base`. Import a family as ``from finelogic.runs import accuracy``.
"""
