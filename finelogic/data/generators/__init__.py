"""Offline generators of benchmark-style problems with gold proofs, deterministic from a seed: one module each
(``fld``, its English templates ``nl``, ``prontoqa``, ``logicmark``), each importing independently."""
