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


# ---- the released code's layout (layout="released"), pinned per dataset and setting -------------
# Items in the shape of the paper's merged evaluation files: each carries its `input` text (kept by the
# loader in meta["input"]). Multi-LogiEval inputs number facts "Fact 1:" and end with the question;
# ProntoQA inputs end with an empty last "FactN:" label (a quirk of the released file, sent as it is).
R_MLE = Problem("mle-1", "multi_logieval", (Fact("fact1", "Liam studies hard"),), "Does Liam pass?", label=PROVED,
              meta={"input": "Fact 1: Liam studies hard\nFact 2: If he studies hard he passes\nQuestion: Does Liam pass?"})
R_PQA = Problem("pqa-1", "prontoqa", (Fact("fact1", "Max is a cat"),), "Max is a cat.", label=DISPROVED,
              meta={"input": "Fact1:Max is a cat\nFact2: Cats are not dogs\nFact3:"})
R_FOLIO = Problem("folio-1", "folio", (Fact("fact1", "All cats purr"),), "Tom purrs.", label=UNKNOWN,
                meta={"input": "Fact1: All cats purr\nHypothesis: Tom purrs."})
R_FLD = Problem("fld-1", "fld", (Fact("fact1", "A"), Fact("fact2", "B")), "C", label=PROVED)
RELEASED_COT = ("Let's think step by step, by considering whether each person is lying and if that leads to "
                "contradiction.")
TWO_DIRECT = ('Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" '
              'for true, or "__DISPROVED__" for false.')


@pytest.mark.parametrize("problem, setting, system, user", [
    (R_MLE, "Direct", TWO_DIRECT, R_MLE.meta["input"] + "\n"),
    (R_MLE, "CoT", SYSTEM_PROMPT_TWO_LABELS, R_MLE.meta["input"] + "\n" + RELEASED_COT),
    (R_PQA, "Direct", TWO_DIRECT, "Fact1:Max is a cat\nFact2: Cats are not dogs\nFact3:\n"),
    (R_PQA, "CoT", SYSTEM_PROMPT_TWO_LABELS, "Fact1:Max is a cat\nFact2: Cats are not dogs\nFact3:\n" + RELEASED_COT),
    (R_FOLIO, "Direct", SYSTEM_PROMPT_THREE_LABELS, "Fact1: All cats purr\nHypothesis: Tom purrs.\n"),
    (R_FOLIO, "CoT", SYSTEM_PROMPT_THREE_LABELS, "Fact1: All cats purr\nHypothesis: Tom purrs.\n" + RELEASED_COT),
    (R_FLD, "Direct", SYSTEM_PROMPT_THREE_LABELS, "Facts: fact1: A\nfact2: B\nHypothesis: C\n"),
    (R_FLD, "CoT", SYSTEM_PROMPT_THREE_LABELS, "Facts: fact1: A\nfact2: B\nHypothesis: C\n" + RELEASED_COT),
])
def test_released_layout_sends_the_items_input_unchanged_then_a_newline_and_the_suffix(problem, setting, system, user):
    conversation = build_conversation(problem, setting, layout="released")
    print(problem.dataset, setting, repr(conversation[1]["content"]))
    assert conversation == [{"role": "system", "content": system}, {"role": "user", "content": user}]


def test_released_few_shot_puts_the_problem_first_then_our_examples_in_the_released_frame():
    proved = Problem("p", "fld", (Fact("fact1", "A"), Fact("fact2", "if A then B")), "B", label=PROVED,
                     proof="fact1 & fact2 -> hypothesis;")
    disproved = Problem("d", "fld", (Fact("fact1", "not B"),), "B", label=DISPROVED, proof="fact1 -> ¬hypothesis;")
    unknown = Problem("u", "fld", (Fact("fact1", "A"),), "B", label=UNKNOWN)
    user = build_conversation(R_MLE, "Few-shot", layout="released",
                              few_shot_examples=[proved, disproved, unknown])[1]["content"]
    assert user == (R_MLE.meta["input"] + "\n"
                    "Here are some examples of proofs for your reference:\n"
                    "[Start of example]\n"
                    "For example, for this question:\n"
                    '"facts": "fact1: A fact2: if A then B",\n'
                    '"hypothesis": "B",\n'
                    "We can conclude that\n"
                    '"fact1 & fact2 -> hypothesis;"\n'
                    "So the answer is\n"
                    "__PROVED__\n"
                    "\n"
                    "There is also this question: \n"
                    '"facts": "fact1: not B", \n'
                    '"hypothesis": "B",\n'
                    "We can prove it by \n"
                    '"fact1 -> ¬hypothesis;"\n'
                    "So the answer is\n"
                    "__DISPROVED__\n"
                    "[End of example]\n"
                    "You can refer to the proof method of the above question, think step by step, and give the "
                    "result of this question.\n")  # two labels: the UNKNOWN example is left out
    fld_user = build_conversation(R_FLD, "Few-shot", layout="released",
                                  few_shot_examples=[proved, disproved, unknown])[1]["content"]
    assert fld_user.startswith("Facts: fact1: A\nfact2: B\nHypothesis: C\nHere are some examples")
    assert ('Or this question:\n"facts": "fact1: A",\n"hypothesis": "B",\nWe prove it in the following way:\n'
            '"Without finding a way to either prove or disprove the hypothesis.\n\nFinal conclusion: __UNKNOWN__"\n'
            "[End of example]\n") in fld_user


def test_an_unknown_layout_is_refused_and_the_old_name_of_the_released_layout_names_the_new_one():
    with pytest.raises(ValueError, match="unknown prompt layout 'paper'; choose one of principled, released$"):
        build_conversation(R_MLE, "Direct", layout="paper")
    with pytest.raises(ValueError, match=r"principled, released \('paper_code_compat' is now called 'released'\)"):  # rename: keep
        build_conversation(R_MLE, "Direct", layout="paper_code_compat")  # rename: keep
