"""Prompt settings of Table 2 (Section 5.1, Appendix F): the paper's system prompts verbatim, one user
message shape for all four benchmarks, CoT suffix, inline few-shot examples."""
from __future__ import annotations

import pytest

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Fact, Problem
from finelogic.prompts import (COT, DIRECT, FEW_SHOT, SYSTEM_PROMPT_THREE_LABELS, SYSTEM_PROMPT_TWO_LABELS,
                               UNKNOWN_EXPLANATION, build_conversation, default_few_shot_examples,
                               get_setting, labels_for, worked_answer)

FLD = Problem(id="fld-1", dataset="fld",
              facts=(Fact("fact1", "the cat is red."), Fact("fact2", "if the cat is red then the cat is happy.")),
              hypothesis="the cat is happy.", label=PROVED, depth=1, proof="fact1 & fact2 -> hypothesis;")
FOLIO = Problem(id="folio-1", dataset="folio",
                facts=(Fact("fact1", "All squares are rectangles."), Fact("fact2", "Shape A is a square.")),
                hypothesis="Shape A is a rectangle.", label=PROVED)
MULTI_LOGIEVAL = Problem(id="d4_pl_MP_1", dataset="multi_logieval",
                         facts=(Fact("fact1", "If Tom studies, he passes."), Fact("fact2", "Tom studies.")),
                         hypothesis="Does Tom pass?", label=PROVED, depth=4)
PRONTOQA = Problem(id="ProntoQA_1", dataset="prontoqa",
                   facts=(Fact("fact1", "Every yumpus is sour."), Fact("fact2", "Max is a yumpus.")),
                   hypothesis="Max is not sour.", label=DISPROVED, depth=5)

EXAMPLES = (
    Problem(id="ex-p", dataset="fld", facts=(Fact("fact1", "the dog is big."),), hypothesis="the dog is big.",
            label=PROVED, depth=0, proof="fact1 -> hypothesis;"),
    Problem(id="ex-d", dataset="fld", facts=(Fact("fact1", "the dog is big."),), hypothesis="the dog is not big.",
            label=DISPROVED, depth=0, proof="fact1 -> ¬hypothesis;"),
    Problem(id="ex-u", dataset="fld", facts=(Fact("fact1", "the dog is big."),), hypothesis="the dog is loud.",
            label=UNKNOWN),
)


def test_system_prompts_are_the_papers_verbatim():
    assert SYSTEM_PROMPT_THREE_LABELS == (
        'Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" '
        'for proven, "__DISPROVED__" for disproven, or "__UNKNOWN__" if uncertain.')
    assert SYSTEM_PROMPT_TWO_LABELS == (
        'Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" '
        'for proven, or "__DISPROVED__" for disproven.')


def test_three_labels_for_fld_and_folio_two_for_multi_logieval_and_prontoqa():
    assert labels_for("fld") == labels_for("folio") == (PROVED, DISPROVED, UNKNOWN)
    assert labels_for("multi_logieval") == labels_for("prontoqa") == (PROVED, DISPROVED)
    with pytest.raises(ValueError, match="logicmark"):
        labels_for("logicmark")


def test_direct_fld_is_system_then_facts_and_hypothesis_without_a_suffix_line():
    assert build_conversation(FLD, DIRECT) == [
        {"role": "system", "content": SYSTEM_PROMPT_THREE_LABELS},
        {"role": "user", "content": "Facts: fact1: the cat is red.\nfact2: if the cat is red then the cat is "
                                    "happy.\nHypothesis: the cat is happy."},
    ]


def test_cot_appends_lets_think_step_by_step_on_its_own_line():
    assert build_conversation(FLD, COT)[1]["content"] == (
        "Facts: fact1: the cat is red.\nfact2: if the cat is red then the cat is happy.\n"
        "Hypothesis: the cat is happy.\nLet's think step by step.")


def test_folio_premises_render_as_numbered_facts_with_the_three_label_prompt():
    system, user = build_conversation(FOLIO, "Direct")
    assert system["content"] == SYSTEM_PROMPT_THREE_LABELS
    assert user["content"] == ("Facts: fact1: All squares are rectangles.\nfact2: Shape A is a square.\n"
                               "Hypothesis: Shape A is a rectangle.")


def test_multi_logieval_context_and_question_render_in_the_same_shape_with_two_labels():
    system, user = build_conversation(MULTI_LOGIEVAL, COT)
    assert system["content"] == SYSTEM_PROMPT_TWO_LABELS
    assert user["content"] == ("Facts: fact1: If Tom studies, he passes.\nfact2: Tom studies.\n"
                               "Hypothesis: Does Tom pass?\nLet's think step by step.")


def test_prontoqa_context_and_statement_render_in_the_same_shape_with_two_labels():
    system, user = build_conversation(PRONTOQA, DIRECT)
    assert system["content"] == SYSTEM_PROMPT_TWO_LABELS
    assert user["content"] == ("Facts: fact1: Every yumpus is sour.\nfact2: Max is a yumpus.\n"
                               "Hypothesis: Max is not sour.")


def test_few_shot_puts_one_worked_example_per_label_inline_before_the_problem():
    system, user = build_conversation(FLD, FEW_SHOT, few_shot_examples=EXAMPLES)
    assert system["content"] == SYSTEM_PROMPT_THREE_LABELS
    assert user["content"] == (
        "Here are solved examples.\n\n"
        "Example 1:\nFacts: fact1: the dog is big.\nHypothesis: the dog is big.\n"
        "Answer: fact1 -> hypothesis;\n__PROVED__\n\n"
        "Example 2:\nFacts: fact1: the dog is big.\nHypothesis: the dog is not big.\n"
        "Answer: fact1 -> ¬hypothesis;\n__DISPROVED__\n\n"
        "Example 3:\nFacts: fact1: the dog is big.\nHypothesis: the dog is loud.\n"
        f"Answer: {UNKNOWN_EXPLANATION}\n__UNKNOWN__\n\n"
        "Now solve this problem.\n"
        "Facts: fact1: the cat is red.\nfact2: if the cat is red then the cat is happy.\nHypothesis: the cat is happy.")


def test_few_shot_leaves_the_unknown_example_out_for_two_label_datasets():
    user = build_conversation(PRONTOQA, FEW_SHOT, few_shot_examples=EXAMPLES)[1]["content"]
    assert user.count("Example ") == 2
    assert "__UNKNOWN__" not in user and UNKNOWN_EXPLANATION not in user
    assert user.endswith("__DISPROVED__\n\nNow solve this problem.\nFacts: fact1: Every yumpus is sour.\n"
                         "fact2: Max is a yumpus.\nHypothesis: Max is not sour.")


def test_examples_are_ignored_outside_the_few_shot_setting():
    assert build_conversation(FLD, COT, few_shot_examples=EXAMPLES) == build_conversation(FLD, COT)


def test_a_proved_example_without_a_gold_proof_is_rejected():
    no_proof = Problem(id="bad", dataset="fld", facts=(Fact("fact1", "a."),), hypothesis="a.", label=PROVED)
    with pytest.raises(ValueError, match="bad"):
        worked_answer(no_proof)


def test_settings_are_found_by_their_table_names():
    assert get_setting("Direct") is DIRECT and get_setting("CoT") is COT and get_setting("Few-shot") is FEW_SHOT
    assert COT.suffix == "Let's think step by step." and DIRECT.suffix == "" and FEW_SHOT.few_shot
    with pytest.raises(ValueError, match="Direct, CoT, Few-shot"):
        get_setting("zero-shot")


def test_default_examples_come_from_our_fld_generator_one_per_label_at_depth_two():
    three = default_few_shot_examples(True)
    assert [e.label for e in three] == [PROVED, DISPROVED, UNKNOWN]
    assert [e.depth for e in three[:2]] == [2, 2]
    assert three[0].proof.endswith("-> hypothesis;") and three[1].proof.endswith("-> ¬hypothesis;")
    assert [e.label for e in default_few_shot_examples(False)] == [PROVED, DISPROVED]
    assert default_few_shot_examples(False)[0] == three[0]  # same seed per label: same example
