"""Offline generators of benchmark-style problems with gold proofs, deterministic from a seed.

Import the module you need (each imports independently): ``finelogic.data.generators.fld`` (FLD-style
deduction problems), ``finelogic.data.generators.nl`` (its English templates and their inverse parser),
``finelogic.data.generators.prontoqa`` and ``finelogic.data.generators.logicmark``.
"""
