"""Supervised fine-tuning data (paper Section 4): the four supervision styles and the training sets."""
from finelogic.sft.datasets import read_jsonl, training_set, write_jsonl
from finelogic.sft.style_checks import check
from finelogic.sft.styles import STYLES, build

__all__ = ["STYLES", "build", "check", "read_jsonl", "training_set", "write_jsonl"]
