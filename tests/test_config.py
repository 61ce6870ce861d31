"""finelogic.config.environment: variables set for a block and restored after it, also on an error."""
from __future__ import annotations

import os

import pytest

from finelogic.config import environment


def test_environment_sets_for_the_block_and_restores_set_and_unset_variables(monkeypatch):
    monkeypatch.setenv("FINELOGIC_TEST_SET", "before")
    monkeypatch.delenv("FINELOGIC_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError):
        with environment(FINELOGIC_TEST_SET="during", FINELOGIC_TEST_UNSET=3):
            assert os.environ["FINELOGIC_TEST_SET"] == "during" and os.environ["FINELOGIC_TEST_UNSET"] == "3"
            raise RuntimeError("the block fails")
    assert os.environ["FINELOGIC_TEST_SET"] == "before" and "FINELOGIC_TEST_UNSET" not in os.environ
