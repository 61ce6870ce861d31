"""One exact judge for every supervision style: the symbolic judge reads back and decides the steps each
style writes, the natural-language ones included (issue: Table 3 compares styles with one judge)."""
from __future__ import annotations

import pandas as pd
import pytest

from finelogic.data.generators.fld import generate_fld
from finelogic.data.problem import DISPROVED, PROVED
from finelogic.eval.judges import SymbolicJudge
from finelogic.eval.soundness import judge_responses
from finelogic.eval.steps import parse_steps
from finelogic.sft.styles import STYLES, build


@pytest.fixture(scope="module")
def problems():
    return [p for p in generate_fld(12, seed=5, depths=(1, 2, 3), labels=(PROVED, DISPROVED), progress=False)]


def test_a_natural_language_step_is_read_as_the_step_it_states(problems):
    problem = problems[0]
    text = ("Let us reason step by step.\n"
            "Step 1: From fact1 and fact2, it follows that the parade happens.\n"
            "Step 2: From step 1 and fact3, it follows that the dog is red, which is the hypothesis.\n__PROVED__")
    first, second = parse_steps(text, problem)
    assert (first.premises, first.conclusion_id, first.conclusion_text) == (("fact1", "fact2"), "int1",
                                                                            "the parade happens")
    assert (second.premises, second.conclusion_id) == (("int1", "fact3"), "hypothesis")
    assert second.premise_texts[0] == "the parade happens"  # step 1's sentence, as the judge reads it
    prose, = parse_steps("Step 1: I think the dog is red because it is red.", problem)
    assert not prose.parsed


@pytest.mark.parametrize("style", STYLES)
def test_the_symbolic_judge_decides_every_step_of_each_styles_gold_text(problems, style):
    records = pd.DataFrame({"id": [p.id for p in problems], "response": [build(style, p) for p in problems],
                            "model": "gold", "setting": f"SFT-{style}"})
    steps = judge_responses(records, {p.id: p for p in problems}, SymbolicJudge())
    decided = steps["decided_by"].eq("symbolic")
    assert len(steps) >= len(problems) and decided.all(), steps.loc[~decided, ["raw", "reason"]].head(3)
    assert steps["valid"].all() and steps["atomic"].all()
