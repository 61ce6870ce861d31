"""Answer extraction: the principled last-marker policy beside the released code's first-marker order."""
from __future__ import annotations

import pytest

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN
from finelogic.eval.extraction import (ReleasedVerdict, extract_answer, marker_labels,
                                       released_gold_marker, score_api, score_depth, score_vllm_overall)

P, D, U = PROVED, DISPROVED, UNKNOWN
THREE = (P, D, U)  # FLD, FOLIO
TWO = (P, D)  # Multi-LogiEval, ProntoQA

# (response, labels, principled, released): hand-written; "differ" rows are marked in the comment.
CASES = [
    ("__PROVED__", THREE, P, P),                                              # marker alone
    ("__DISPROVED__ because fact2 says the cat is not happy.", THREE, D, D),  # marker at the start
    ("fact1 & fact2 -> hypothesis;\n__PROVED__", THREE, P, P),                # marker at the end
    ('"__DISPROVED__".', THREE, D, D),                                        # quoted, with punctuation
    ("__DISPROVED__ contains no __PROVED__ inside", THREE, P, P),             # second marker is genuine
    ("My first guess was __PROVED__, but fact3 blocks it: __DISPROVED__", THREE, D, P),  # differ: last vs order
    ("__UNKNOWN__ at first; on reflection __PROVED__", THREE, P, P),          # both end on PROVED
    ("__PROVED__ ... wait, fact4 is missing. Final answer: UNKNOWN", THREE, U, P),  # differ: bare last word
    ("", THREE, None, U),                                                     # differ: empty -> UNKNOWN default
    ("The hypothesis follows from fact1.", THREE, None, U),                   # differ: no marker
    ("__proved__", THREE, P, U),                                              # differ: lower-case underscored
    ("int2 cannot be proved, so whether it holds is unknown.", THREE, None, U),  # differ: lower-case prose is no marker
    ("The hypothesis is DISPROVED.", THREE, D, D),                            # bare upper-case word
    ("**UNKNOWN**", THREE, U, U),                                             # markdown bold
    ("Not PROVED; the hypothesis is DISPROVED.", THREE, D, D),                # PROVED inside DISPROVED ignored
    ("__YES__", THREE, P, P),                                                 # YES maps to PROVED
    ("__no__", TWO, D, U),                                                    # differ: lower case
    ("YES", TWO, P, P),                                                       # bare YES on a two-label set
    ("YES", THREE, None, P),                                                  # differ: bare YES only for two labels
    ("NO, Max is not sour.", TWO, D, D),                                      # bare NO on a two-label set
    ("There is NO fact about Wren, but fact2 gives it: __PROVED__", TWO, P, P),
    ("NOTE: the facts are insufficient.", TWO, None, D),                      # differ: NO inside NOTE (substring)
    ("__UNKNOWN__", TWO, None, U),                                            # differ: UNKNOWN is not offered
    ("__PROVED__, or rather __UNKNOWN__", TWO, P, P),                         # ... so the earlier marker stands
]


@pytest.mark.parametrize("response, labels, principled, compat", CASES)
def test_extracted_answer_under_both_policies(response, labels, principled, compat):
    assert extract_answer(response, "principled", labels) == principled
    assert extract_answer(response, "released", labels) == compat


def test_the_table_shows_the_policies_disagreeing_on_ten_responses():
    assert sum(principled != compat for _, _, principled, compat in CASES) == 10


def test_markers_are_listed_in_order_of_appearance_without_overlaps():
    text = "__DISPROVED__ then DISPROVED then __unknown__ then PROVED"
    assert marker_labels(text) == [D, D, U, P]


def test_none_response_reads_as_empty():
    assert extract_answer(None) is None
    assert extract_answer(None, "released") == U


def test_principled_is_the_default_policy_and_others_are_refused():
    assert extract_answer("__PROVED__ ... __DISPROVED__") == D
    with pytest.raises(ValueError, match="principled, released"):
        extract_answer("__PROVED__", "first_marker")


# ------------------------------------------------------------------------------------ released scorers
#
# Each row: a response, what the released vLLM scorer and API scorer find in it (the marker without
# underscores; None: nothing, no default), and each scorer's verdict on the ten (dataset, gold) columns
#   FLD P D U | FOLIO P D U | Multi-LogiEval P(=__YES__) D(=__NO__) | ProntoQA P D
# written "PDU PDU PD PD" with 1 = correct. Worked out by hand from src/eval_vllm_overall.py,
# src/evaluate_api.py and src/process_result_by_step.py of YujunZhou/Logical; every verdict was then
# checked against those released functions run unchanged in a scratch folder outside the repository
# (their evaluate_model_responses and analyze_proof_accuracy, fed the same response and gold): all agree.
COLUMNS = [("fld", P), ("fld", D), ("fld", U), ("folio", P), ("folio", D), ("folio", U),
           ("multi_logieval", P), ("multi_logieval", D), ("prontoqa", P), ("prontoqa", D)]
NONE_RIGHT = "000 000 00 00"
RELEASED = [
    # response, vLLM finds, vLLM verdicts, API finds, API verdicts, depth verdicts
    ("__PROVED__", "PROVED", "100 100 10 10", "PROVED", "100 100 10 10", "100 100 00 10"),
    ("__DISPROVED__", "DISPROVED", "010 010 01 01", "DISPROVED", "010 010 01 01", "010 010 00 01"),
    ("__UNKNOWN__", "UNKNOWN", "001 001 00 00", "UNKNOWN", "001 001 00 00", "001 001 00 00"),
    ("", "UNKNOWN", "001 001 00 00", None, NONE_RIGHT, NONE_RIGHT),  # empty: the UNKNOWN default
    ("The hypothesis follows from fact1.", "UNKNOWN", "001 001 00 00", None, NONE_RIGHT, NONE_RIGHT),
    ("__YES__", "YES", "000 000 10 00", "YES", "000 000 10 00", "000 000 10 00"),  # YES counts on M-L only
    ("__NO__", "NO", "000 000 01 00", "NO", "000 000 01 00", "000 000 01 00"),
    ("YES", "YES", "000 000 10 00", None, NONE_RIGHT, NONE_RIGHT),  # bare: vLLM only
    ("NO", "NO", "000 000 01 00", None, NONE_RIGHT, NONE_RIGHT),
    ("NOTE: the facts are insufficient.", "NO", "000 000 01 00", None, NONE_RIGHT, NONE_RIGHT),  # NO in NOTE
    ("NONE of the facts mention Wren.", "NO", "000 000 01 00", None, NONE_RIGHT, NONE_RIGHT),  # NO in NONE
    ("KNOWN facts do not settle it.", "NO", "000 000 01 00", None, NONE_RIGHT, NONE_RIGHT),  # NO in KNOWN
    ("YESTERDAY was sunny.", "YES", "000 000 10 00", None, NONE_RIGHT, NONE_RIGHT),  # YES in YESTERDAY
    ("__PROVED__ ... __DISPROVED__", "PROVED", "100 100 10 10", "PROVED", "100 100 10 10", "110 110 00 11"),
    ("__DISPROVED__ then __PROVED__", "PROVED", "100 100 10 10", "PROVED", "100 100 10 10", "110 110 00 11"),
    ("__UNKNOWN__ or maybe __DISPROVED__", "DISPROVED", "010 010 01 01", "DISPROVED", "010 010 01 01",
     "011 011 00 01"),
    ("The answer is DISPROVED.", "DISPROVED", "010 010 01 01", None, NONE_RIGHT, NONE_RIGHT),
    ("PROVED", "PROVED", "100 100 10 10", None, NONE_RIGHT, NONE_RIGHT),
    ("UNKNOWN", "UNKNOWN", "001 001 00 00", None, NONE_RIGHT, NONE_RIGHT),
    ("NOT PROVED", "PROVED", "100 100 10 10", None, NONE_RIGHT, NONE_RIGHT),  # PROVED is tested before NO
    ("NOTE: __UNKNOWN__", "UNKNOWN", "001 001 00 00", "UNKNOWN", "001 001 00 00", "001 001 00 00"),
    ("YES, so __DISPROVED__", "DISPROVED", "010 010 01 01", "DISPROVED", "010 010 01 01", "010 010 00 01"),
    ("__YES__ and __PROVED__", "PROVED", "100 100 10 10", "PROVED", "100 100 10 10", "100 100 10 10"),
    ("__NO__ but NOTE __UNKNOWN__", "UNKNOWN", "001 001 00 00", "UNKNOWN", "001 001 00 00", "001 001 01 00"),
    ("__proved__", "UNKNOWN", "001 001 00 00", None, NONE_RIGHT, NONE_RIGHT),  # case-sensitive
    ("**UNKNOWN**", "UNKNOWN", "001 001 00 00", None, NONE_RIGHT, NONE_RIGHT),
    ("__YES__ __NO__", "YES", "000 000 10 00", "YES", "000 000 10 00", "000 000 11 00"),
    ("NO, __YES__", "YES", "000 000 10 00", "YES", "000 000 10 00", "000 000 10 00"),
    ("__NO__, YES", "NO", "000 000 01 00", "NO", "000 000 01 00", "000 000 01 00"),
    ("Final answer: __DISPROVED__. NONE of the facts support it.", "DISPROVED", "010 010 01 01",
     "DISPROVED", "010 010 01 01", "010 010 00 01"),
    ("UNKNOWN, NO proof", "UNKNOWN", "001 001 00 00", None, NONE_RIGHT, NONE_RIGHT),  # UNKNOWN before NO
    ("__PROVED_", "PROVED", "100 100 10 10", None, NONE_RIGHT, NONE_RIGHT),  # malformed: bare PROVED
    ("__UNKNOWN__ is not an option; YES", "UNKNOWN", "001 001 00 00", "UNKNOWN", "001 001 00 00",
     "001 001 00 00"),
    ("Disproved.", "UNKNOWN", "001 001 00 00", None, NONE_RIGHT, NONE_RIGHT),  # title case is no marker
    ("The facts say NO. __PROVED__", "PROVED", "100 100 10 10", "PROVED", "100 100 10 10", "100 100 00 10"),
    ("___PROVED___", "PROVED", "100 100 10 10", "PROVED", "100 100 10 10", "100 100 00 10"),
]
YES_NO_AS_LABEL = {"YES": P, "NO": D}


def _released_cases():
    for response, vllm_found, vllm, api_found, api, depth in RELEASED:
        verdicts = [v.replace(" ", "") for v in (vllm, api, depth)]
        for column, (dataset, gold) in enumerate(COLUMNS):
            expected = tuple(v[column] == "1" for v in verdicts)
            yield pytest.param(response, dataset, gold, vllm_found, api_found, expected,
                               id=f"{response[:24]!r}-{dataset}-{gold}")


RELEASED_CASES = list(_released_cases())


@pytest.mark.parametrize("response, dataset, gold, vllm_found, api_found, expected", RELEASED_CASES)
def test_released_scorers_verdicts(response, dataset, gold, vllm_found, api_found, expected):
    vllm, api, depth = (score(response, gold, dataset) for score in (score_vllm_overall, score_api, score_depth))
    assert (vllm.correct, api.correct, depth.correct) == expected
    as_label = YES_NO_AS_LABEL if dataset == "multi_logieval" else {}  # the gold there is __YES__/__NO__
    assert vllm.prediction == as_label.get(vllm_found, vllm_found)
    assert api.prediction == as_label.get(api_found, api_found)
    assert depth.prediction is None


def test_the_released_table_has_over_150_cases_over_four_datasets():
    assert len(RELEASED_CASES) == 10 * len(RELEASED) >= 150
    assert {dataset for dataset, _ in COLUMNS} == {"fld", "folio", "multi_logieval", "prontoqa"}


def test_gold_markers_as_the_released_files_store_them():
    assert released_gold_marker(P, "multi_logieval") == "__YES__"
    assert released_gold_marker(D, "multi_logieval") == "__NO__"
    assert [released_gold_marker(g, "fld") for g in (P, D, U)] == ["__PROVED__", "__DISPROVED__", "__UNKNOWN__"]
    assert released_gold_marker(D, "prontoqa") == "__DISPROVED__"


def test_scorers_read_none_as_empty():
    assert score_vllm_overall(None, U, "fld") == ReleasedVerdict(U, True)
    assert score_api(None, U, "fld") == ReleasedVerdict(None, False)
    assert score_depth(None, U, "fld") == ReleasedVerdict(None, False)
