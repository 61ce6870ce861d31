"""Datasets: one :class:`Problem` schema, loaders for the published files, offline generators."""
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Fact, Problem

__all__ = ["Fact", "Problem", "PROVED", "DISPROVED", "UNKNOWN", "LABELS"]
