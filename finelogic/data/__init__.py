"""Datasets: one :class:`Problem` schema, loaders for the published files, offline generators."""
from finelogic.data.generate import generate
from finelogic.data.datasets import DataNotFoundError, DatasetFormatError, LoadedDataset, load_dataset
from finelogic.data.problem import DISPROVED, LABELS, PROVED, UNKNOWN, Fact, Problem

__all__ = ["Fact", "Problem", "PROVED", "DISPROVED", "UNKNOWN", "LABELS", "load_dataset", "LoadedDataset",
           "DatasetFormatError", "DataNotFoundError", "generate", "dataset_summary"]


def __getattr__(name: str):
    if name == "dataset_summary":  # pandas is heavy: import the Table 1 helper only when used
        from finelogic.data.stats import dataset_summary

        return dataset_summary
    raise AttributeError(f"module 'finelogic.data' has no attribute {name!r}")
