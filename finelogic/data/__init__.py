"""Datasets: one :class:`Problem` schema, loaders for the published files, offline generators."""
from finelogic.data.generate import generate
from finelogic.data.datasets import DataNotFoundError, DatasetFormatError, LoadedDataset, load_dataset
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Fact, Problem

__all__ = ["Fact", "Problem", "PROVED", "DISPROVED", "UNKNOWN", "LABELS", "load_dataset", "LoadedDataset",
           "DatasetFormatError", "DataNotFoundError", "generate"]
