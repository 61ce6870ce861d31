"""A paper-scale rehearsal with stand-in models: what a paper run sends, how long it takes, and where it
breaks, measured on a CPU before any GPU or API money is spent. See :mod:`finelogic.rehearsal.rehearse`."""
from finelogic.rehearsal.rehearse import Rehearsal, parse_price, plan_table, rehearse

__all__ = ["Rehearsal", "parse_price", "plan_table", "rehearse"]
