"""Forced-choice answers (our addition): each label's marker scored after the model's own response; the
argmax of summed log-probs is the answer. A scripted backend gives the log-probs, so every value is by hand."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Fact, Problem
from finelogic.eval.forced_choice import (
    ANSWER_CUE, FORCED_COLUMNS, NO_CHAT_TEMPLATE, NO_LOGLIKELIHOOD, NO_OUTPUT, chance_level, contextual_calibration,
    forced_choice, summarize_forced)
from finelogic.models.base import BackendStats


def _problem(pid: str, dataset: str, label: str) -> Problem:
    return Problem(id=pid, dataset=dataset, facts=(Fact("fact1", "the cat is red."),), hypothesis=f"{pid} holds.",
                   label=label, depth=1 if dataset == "fld" else None)


PROBLEMS = [_problem("a", "fld", DISPROVED), _problem("b", "fld", PROVED), _problem("c", "prontoqa", PROVED),
            _problem("d", "fld", UNKNOWN)]


def _listed(column: pd.Series) -> list:
    """A column as a list, missing values as None (pandas 3 stores a missing string as NaN)."""
    return [None if pd.isna(x) else x for x in column]


def _records(*responses: str, setting: str = "CoT") -> pd.DataFrame:
    return pd.DataFrame([{"id": p.id, "dataset": p.dataset, "gold": p.label, "response": r, "setting": setting,
                          "layout": "principled", "model": "m"} for p, r in zip(PROBLEMS, responses)])


class Tagged:
    """A stand-in chat template: ``[system]...[user]...[assistant]``."""

    chat_template = "tagged"

    def apply_chat_template(self, conversation, add_generation_prompt, tokenize):
        assert add_generation_prompt and not tokenize
        return "".join(f"[{m['role']}]{m['content']}" for m in conversation) + "[assistant]"


class Scores:
    """Log-probs by (response word, marker): the context's response is the text before the cue."""

    def __init__(self, table, tokenizer=Tagged()):
        self.table, self.tokenizer, self.stats, self.requests = table, tokenizer, BackendStats(), []

    def loglikelihood(self, requests):
        self.requests += requests
        return [(self.table[(context.split("[assistant]")[-1].removesuffix(ANSWER_CUE), marker)], 3, False)
                for context, marker in requests]


TABLE = {("rambles", "__PROVED__"): -3.0, ("rambles", "__DISPROVED__"): -1.5, ("rambles", "__UNKNOWN__"): -2.0,
         ("even", "__PROVED__"): -2.0, ("even", "__DISPROVED__"): -2.0, ("even", "__UNKNOWN__"): -2.5,
         ("yes-ish", "__PROVED__"): -0.5, ("yes-ish", "__DISPROVED__"): -0.7}


def test_the_label_with_the_highest_summed_logprob_is_the_forced_answer_and_ties_go_to_the_first_label():
    backend = Scores(TABLE)
    forced = forced_choice(PROBLEMS[:3], _records("rambles", "even", "yes-ish"), backend)
    assert list(forced.columns) == list(FORCED_COLUMNS)
    assert forced["forced_prediction"].tolist() == [DISPROVED, PROVED, PROVED]  # -1.5 best; tie at -2.0; -0.5
    assert forced["forced_correct"].tolist() == [True, True, True]
    assert forced["forced_ll_proved"].tolist() == [-3.0, -2.0, -0.5]
    assert forced["forced_ll_disproved"].tolist() == [-1.5, -2.0, -0.7]
    # ProntoQA offers two labels: UNKNOWN is not scored there
    assert forced["forced_ll_unknown"].tolist()[:2] == [-2.0, -2.5] and math.isnan(forced["forced_ll_unknown"][2])
    assert forced["forced_reason"].isna().all()
    assert len(backend.requests) == 3 + 3 + 2


def test_the_context_is_the_chat_formatted_prompt_the_response_and_the_cue():
    backend = Scores(TABLE)
    forced_choice(PROBLEMS, _records("", "", "yes-ish"), backend)  # empty responses send no request
    context, marker = backend.requests[0]
    system = ('Based on the provided facts, verify the hypothesis. Conclude with one of the markers: "__PROVED__" '
              'for proven, or "__DISPROVED__" for disproven.')
    user = "Facts: fact1: the cat is red.\nHypothesis: c holds.\nLet's think step by step."
    assert context == f"[system]{system}[user]{user}[assistant]yes-ish\nFinal answer: "
    assert [m for _, m in backend.requests] == ["__PROVED__", "__DISPROVED__"]


def test_a_wrong_forced_answer_counts_wrong_and_an_empty_response_is_not_forced():
    backend = Scores(TABLE)
    forced = forced_choice(PROBLEMS, _records("rambles", "", "yes-ish", "rambles"), backend)
    assert _listed(forced["forced_prediction"]) == [DISPROVED, None, PROVED, DISPROVED]
    assert forced["forced_correct"].tolist() == [True, pd.NA, True, False]  # d is UNKNOWN, forced DISPROVED
    assert _listed(forced["forced_reason"]) == [None, NO_OUTPUT, None, None]
    assert len(backend.requests) == 3 + 2 + 3


class Refuses(Scores):
    def loglikelihood(self, requests):
        raise RuntimeError("the completions endpoint returned no echoed log-probs")


def test_a_backend_that_cannot_score_leaves_the_column_empty_with_its_reason_and_never_raises():
    records = _records("rambles", "even")
    refused = forced_choice(PROBLEMS, records, Refuses(TABLE))
    assert refused["forced_correct"].isna().all() and refused["forced_prediction"].isna().all()
    assert refused["forced_reason"].tolist() == [f"{NO_LOGLIKELIHOOD}: RuntimeError: the completions endpoint "
                                                 "returned no echoed log-probs"] * 2
    no_template = Scores(TABLE, tokenizer=None)
    assert forced_choice(PROBLEMS, records, no_template)["forced_reason"].tolist() == [NO_CHAT_TEMPLATE] * 2
    assert no_template.requests == []

    class GenerateOnly:
        tokenizer = Tagged()

    assert forced_choice(PROBLEMS, records, GenerateOnly())["forced_reason"].tolist() == [NO_LOGLIKELIHOOD] * 2


def test_chance_is_one_over_the_number_of_labels():
    assert chance_level("fld") == pytest.approx(100 / 3) and chance_level("folio") == pytest.approx(100 / 3)
    assert chance_level("prontoqa") == 50 and chance_level("multi_logieval") == 50


def test_forced_summary_counts_scored_records_only_with_wilson_interval_and_chance():
    records = _records("rambles", "", "yes-ish", "rambles")
    records = pd.concat([records, forced_choice(PROBLEMS, records, Scores(TABLE))], axis=1)
    summary = summarize_forced(records, by="dataset")
    assert summary["dataset"].tolist() == ["fld", "prontoqa"]
    assert summary["n"].tolist() == [2, 1] and summary["correct"].tolist() == [1, 1]  # b (empty) not scored
    assert summary["accuracy"].tolist() == [50.0, 100.0]
    assert summary["ci_low"].round(1).tolist() == [9.5, 20.7] and summary["ci_high"].round(1).tolist() == [90.5, 100.0]
    assert summary["chance"].round(1).tolist() == [33.3, 50.0]
    assert summarize_forced(records.drop(columns=list(FORCED_COLUMNS)), by="dataset").empty


# A model that prefers __PROVED__ whatever it is shown (its content-free scores, response ""), with a little
# signal on top in each response's scores.
BIASED = {("", "__PROVED__"): -0.2, ("", "__DISPROVED__"): -2.0, ("", "__UNKNOWN__"): -3.0,
          ("leans-disproved", "__PROVED__"): -0.3, ("leans-disproved", "__DISPROVED__"): -1.2,
          ("leans-disproved", "__UNKNOWN__"): -3.5,
          ("leans-proved", "__PROVED__"): -0.1, ("leans-proved", "__DISPROVED__"): -2.5,
          ("leans-proved", "__UNKNOWN__"): -3.5,
          ("leans-unknown", "__PROVED__"): -0.3, ("leans-unknown", "__DISPROVED__"): -2.4,
          ("leans-unknown", "__UNKNOWN__"): -2.0}


def _forced(backend, *responses):
    records = _records(*responses)
    return records.join(forced_choice(PROBLEMS, records, backend))


def test_contextual_calibration_removes_a_constant_preference_that_forced_choice_keeps():
    backend = Scores(BIASED)
    records = _forced(backend, "leans-disproved", "leans-proved", "leans-proved", "leans-unknown")
    assert records["forced_prediction"].tolist() == [PROVED] * 4  # uncalibrated: PROVED every time, 2 of 4 right
    asked = len(backend.requests)
    calibrated = contextual_calibration(records, backend)
    assert calibrated["calibrated_prediction"].tolist() == [DISPROVED, PROVED, PROVED, UNKNOWN]
    assert calibrated["calibrated_correct"].tolist() == [True] * 4
    summary = summarize_forced(records.join(calibrated), by="dataset", column="calibrated_correct")
    assert summary["accuracy"].tolist() == [100.0, 100.0]
    # three content-free inputs per prompt format (FLD: 3 labels; ProntoQA: 2), not one per item
    contexts = backend.requests[asked:]
    assert len(contexts) == 3 * 3 + 3 * 2
    users = {c.split("[user]")[1].split("[assistant]")[0] for c, _ in contexts}
    assert users == {f"Facts: fact1: {t}\nHypothesis: {t}\nLet's think step by step." for t in ("N/A", "", "[MASK]")}
    assert all(c.endswith("[assistant]" + ANSWER_CUE) for c, _ in contexts)  # no response before the cue


def test_calibration_leaves_unforced_records_empty_and_never_raises_when_the_backend_cannot_score():
    records = _forced(Scores(BIASED), "leans-disproved", "", "leans-proved", "leans-unknown")
    calibrated = contextual_calibration(records, Scores(BIASED))
    assert _listed(calibrated["calibrated_prediction"]) == [DISPROVED, None, PROVED, UNKNOWN]
    assert calibrated["calibrated_correct"].tolist() == [True, pd.NA, True, True]
    refused = contextual_calibration(records, Refuses(BIASED))
    assert refused["calibrated_prediction"].isna().all() and refused["calibrated_correct"].isna().all()
