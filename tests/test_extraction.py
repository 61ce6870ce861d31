"""Answer extraction: the principled last-marker policy beside the released code's first-marker order."""
from __future__ import annotations

import pytest

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN
from finelogic.eval.extraction import extract_answer, marker_labels

P, D, U = PROVED, DISPROVED, UNKNOWN
THREE = (P, D, U)  # FLD, FOLIO
TWO = (P, D)  # Multi-LogiEval, ProntoQA

# (response, labels, principled, paper_code_compat): hand-written; "differ" rows are marked in the comment.
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
    assert extract_answer(response, "paper_code_compat", labels) == compat


def test_the_table_shows_the_policies_disagreeing_on_ten_responses():
    assert sum(principled != compat for _, _, principled, compat in CASES) == 10


def test_markers_are_listed_in_order_of_appearance_without_overlaps():
    text = "__DISPROVED__ then DISPROVED then __unknown__ then PROVED"
    assert marker_labels(text) == [D, D, U, P]


def test_none_response_reads_as_empty():
    assert extract_answer(None) is None
    assert extract_answer(None, "paper_code_compat") == U


def test_principled_is_the_default_policy_and_others_are_refused():
    assert extract_answer("__PROVED__ ... __DISPROVED__") == D
    with pytest.raises(ValueError, match="principled, paper_code_compat"):
        extract_answer("__PROVED__", "first_marker")
