"""The symbolic judge's memos, shared by every run that judges steps (the soundness run, the supervision
run's judged FLD responses): a step or response judged by one is read back by the other.

The pure symbolic work is kept in memos (:class:`finelogic.memo.Memo`, versioned by the sources it runs):
the symbolic judge's verdicts (``symbolic-verdicts``) and each response's steps as read
(``soundness-steps``), so a rerun with every model answer cached neither reads nor judges a step again.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from finelogic.memo import Memo, source_version


@contextlib.contextmanager
def judging_memos() -> Iterator[tuple[Memo, Memo]]:
    """The symbolic judge's verdicts and the steps as read, kept across runs; flushed when the block ends."""
    with Memo("symbolic-verdicts", source_version("finelogic.eval.judges")) as verdicts, \
            Memo("soundness-steps", source_version("finelogic.eval.soundness")) as read:
        yield verdicts, read
