"""Overall benchmark accuracy (Section 3.1): records per problem, FLD depth buckets, Wilson intervals,
summaries; the accuracy and depth runs with a handed-in backend, and what they write. A fake backend
answers from a table, so no model is loaded."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Fact, Problem
from finelogic.eval.accuracy import RECORD_COLUMNS, depth_bucket, evaluate_accuracy, summarize
from finelogic.eval.forced_choice import CALIBRATED_COLUMNS, FORCED_COLUMNS, NO_LOGLIKELIHOOD, NOT_A_PROMPT_SETTING
from finelogic.eval.stats import ABOVE, BELOW, OVERLAP, compare_intervals, wilson_interval
from finelogic.models.base import BackendStats, Completion, GenerationConfig
from finelogic.prompts import COT, DIRECT, FEW_SHOT


def _problem(pid: str, dataset: str, label: str, depth: int | None, hypothesis: str) -> Problem:
    return Problem(id=pid, dataset=dataset, facts=(Fact("fact1", "the cat is red."),), hypothesis=hypothesis,
                   label=label, depth=depth, proof="fact1 -> hypothesis;" if label == PROVED else None)


# Problem, the response the fake model gives, and by hand: principled / released vLLM scorer's prediction.
ITEMS = [
    (_problem("fld-a", "fld", PROVED, 2, "h1."), "fact1 -> hypothesis;\n__PROVED__", PROVED, PROVED),
    (_problem("fld-b", "fld", DISPROVED, 9, "h2."), "__PROVED__", PROVED, PROVED),
    (_problem("fld-c", "fld", UNKNOWN, None, "h3."), "I cannot tell.", None, UNKNOWN),
    # bare YES: an answer on a two-label set (principled); the released scorer finds YES, wrong on ProntoQA
    (_problem("pronto-a", "prontoqa", PROVED, 5, "h4."), "The answer is YES", PROVED, "YES"),
    (_problem("folio-a", "folio", UNKNOWN, None, "h5."), "first __PROVED__, finally __UNKNOWN__", UNKNOWN, PROVED),
]
PROBLEMS = [p for p, *_ in ITEMS]
RESPONSES = {p.hypothesis: r for p, r, *_ in ITEMS}


class FakeBackend:
    """Answers each conversation from RESPONSES by its hypothesis line; counts calls and conversations."""

    def __init__(self, tokenizer=None):
        self.stats = BackendStats()
        self.model_name = "fake-model"
        self.tokenizer = tokenizer
        self.batches: list[int] = []
        self.configs: list[GenerationConfig] = []

    def generate(self, conversations, config=GenerationConfig()):
        self.stats.add(calls=1)
        self.batches.append(len(conversations))
        self.configs.append(config)
        return [RESPONSES[c[-1]["content"].split("Hypothesis: ")[1].split("\n")[0]] for c in conversations]


class OneTokenPerMessage:
    """A stand-in tokenizer: each chat message is one token, plus one for the generation prompt; text
    splits on whitespace."""

    chat_template = "one token per message"

    def apply_chat_template(self, conversation, add_generation_prompt, tokenize):
        return list(range(len(conversation) + add_generation_prompt))

    def __call__(self, text, add_special_tokens):
        return {"input_ids": text.split()}


def _listed(column: pd.Series) -> list:
    """A column as a list, missing values as None (pandas 3 stores a missing string as NaN)."""
    return [None if pd.isna(x) else x for x in column]


@pytest.fixture(autouse=True)
def _own_results(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))


# ------------------------------------------------------------------------------------------------ buckets


@pytest.mark.parametrize("depth, label, bucket", [
    (0, PROVED, "0-3"), (3, DISPROVED, "0-3"), (4, PROVED, "4-7"), (11, PROVED, "8-11"),
    (12, DISPROVED, "12-15"), (19, PROVED, "16-19"), (None, UNKNOWN, "UNKNOWN"), (7, UNKNOWN, "UNKNOWN"),
])
def test_depth_bucket_follows_table_5(depth, label, bucket):
    assert depth_bucket(depth, label) == bucket


def test_depth_bucket_is_none_outside_fld():
    assert depth_bucket(5, PROVED, "prontoqa") is None
    assert depth_bucket(None, UNKNOWN, "folio") is None


# ------------------------------------------------------------------------------------------------ Wilson


def test_wilson_interval_of_8_of_10_is_49_to_94_percent():
    low, high = wilson_interval(8, 10)
    assert (round(100 * low, 1), round(100 * high, 1)) == (49.0, 94.3)


def test_wilson_interval_edges_stay_inside_zero_and_one():
    assert wilson_interval(0, 5)[0] == 0.0 and round(100 * wilson_interval(0, 5)[1], 1) == 43.4
    assert round(100 * wilson_interval(5, 5)[0], 1) == 56.6 and wilson_interval(5, 5)[1] == 1.0
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(6, 5)


def test_intervals_are_apart_only_when_they_do_not_overlap():
    assert compare_intervals(60, 80, 40, 59) == ABOVE and compare_intervals(40, 59, 60, 80) == BELOW
    assert compare_intervals(60, 80, 40, 60) == OVERLAP  # touching ends overlap
    assert compare_intervals(60, 80, 59.9) == ABOVE and compare_intervals(60, 80, 70) == OVERLAP  # a fixed level
    assert compare_intervals(math.nan, 80, 40, 59) == OVERLAP


# ------------------------------------------------------------------------------------------------ evaluation


def test_one_record_per_problem_in_order_with_hand_computed_answers():
    backend = FakeBackend()
    records = evaluate_accuracy(PROBLEMS, backend, COT, batch_size=2)
    assert list(records.columns) == list(RECORD_COLUMNS)
    assert list(records["id"]) == ["fld-a", "fld-b", "fld-c", "pronto-a", "folio-a"]
    assert list(records["gold"]) == [PROVED, DISPROVED, UNKNOWN, PROVED, UNKNOWN]
    assert _listed(records["prediction"]) == [PROVED, PROVED, None, PROVED, UNKNOWN]
    assert list(records["correct"]) == [True, False, False, True, True]
    assert list(records["no_answer"]) == [False, False, True, False, False]
    assert _listed(records["depth_bucket"]) == ["0-3", "8-11", "UNKNOWN", None, None]
    assert list(records["response"]) == [r for _, r, *_ in ITEMS]
    assert set(records["setting"]) == {"CoT"} and set(records["model"]) == {"fake-model"}
    assert backend.batches == [2, 2, 1]  # chunks of batch_size, one generate call each


def test_compat_columns_count_a_markerless_answer_on_an_unknown_item_as_correct():
    records = evaluate_accuracy(PROBLEMS, FakeBackend(), DIRECT).set_index("id")
    assert pd.isna(records.loc["fld-c", "prediction"]) and not records.loc["fld-c", "correct"]
    assert records.loc["fld-c", "prediction_compat"] == UNKNOWN and records.loc["fld-c", "correct_compat"]
    # ... and the released code's first-marker order gets the FOLIO item wrong that the last marker gets right.
    assert records.loc["folio-a", "prediction_compat"] == PROVED and not records.loc["folio-a", "correct_compat"]
    assert list(records["correct_compat"]) == [True, False, True, False, False]


def test_main_columns_follow_the_principled_policy_and_the_compat_columns_the_released_code():
    records = evaluate_accuracy(PROBLEMS, FakeBackend(), DIRECT)
    assert _listed(records["prediction"]) == [p for *_, p, _ in ITEMS]
    assert list(records["prediction_compat"]) == [c for *_, c in ITEMS]
    assert list(records["no_answer"]) == [False, False, True, False, False]  # no marker in the text
    assert set(records["policy"]) == {"principled"}


def test_evaluation_writes_no_file_and_takes_the_model_name_it_is_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    records = evaluate_accuracy(PROBLEMS, FakeBackend(), COT, model="my-model", batch_size=2)
    assert set(records["model"]) == {"my-model"}
    assert list(tmp_path.rglob("*")) == []  # nothing under the results folder (FINELOGIC_RESULTS) nor here


def test_few_shot_examples_reach_the_prompt():
    backend = FakeBackend()
    seen = []
    backend.generate = lambda conversations, config: seen.extend(conversations) or ["__PROVED__"] * len(conversations)
    evaluate_accuracy(PROBLEMS[1:2], backend, FEW_SHOT, few_shot_examples=PROBLEMS[:1])
    prompt = "".join(m["content"] for m in seen[0])
    assert "Hypothesis: h1.\n" in prompt and "fact1 -> hypothesis;" in prompt and "Hypothesis: h2." in prompt


def test_nothing_is_cached_here_every_run_asks_the_backend_again():
    backend = FakeBackend()
    config = GenerationConfig(max_new_tokens=64)
    for _ in range(2):
        evaluate_accuracy(PROBLEMS, backend, DIRECT, config=config)
    # every problem was asked twice, with the same decoding: nothing came from a cache in between
    assert sum(backend.batches) == 2 * len(PROBLEMS) and set(backend.configs) == {config}


def test_token_counts_come_from_the_backends_tokenizer_else_none():
    with_tokenizer = evaluate_accuracy(PROBLEMS, FakeBackend(OneTokenPerMessage()), DIRECT)
    assert list(with_tokenizer["prompt_tokens"]) == [3] * 5  # system + user + generation prompt
    assert list(with_tokenizer["completion_tokens"]) == [4, 1, 3, 4, 4]
    without = evaluate_accuracy(PROBLEMS, FakeBackend(), DIRECT)
    assert without["prompt_tokens"].isna().all() and without["completion_tokens"].isna().all()
    assert list(without["completion_chars"]) == [31, 10, 14, 17, 37]


def test_unlabelled_problems_are_refused_before_any_generation():
    choice = Problem(id="lm-1", dataset="logicmark", facts=(), hypothesis="a = b", options=("x", "y"),
                     answer_index=0)
    backend = FakeBackend()
    with pytest.raises(ValueError, match="lm-1"):
        evaluate_accuracy([choice], backend, DIRECT)
    assert backend.stats.calls == 0


# ------------------------------------------------------------------------------------------------ summaries


def test_summary_by_dataset_counts_accuracy_interval_and_no_answers():
    records = evaluate_accuracy(PROBLEMS, FakeBackend(), DIRECT)
    summary = summarize(records).set_index("dataset")
    assert list(summary.index) == ["fld", "prontoqa", "folio"]  # order of first appearance
    assert summary.loc["fld", ["n", "correct", "no_answer"]].tolist() == [3, 1, 1]
    assert summary.loc["fld", "accuracy"] == pytest.approx(100 / 3)
    # Wilson 1/3 by hand: centre (1/3 + 0.6402) / 2.2805 = 0.4269, half-width 0.3654.
    assert summary.loc["fld", "ci_low"] == pytest.approx(6.15, abs=0.01)
    assert summary.loc["fld", "ci_high"] == pytest.approx(79.23, abs=0.01)
    assert summary.loc["prontoqa", ["n", "correct", "accuracy"]].tolist() == [1, 1, 100.0]
    compat = summarize(records, correct_column="correct_compat").set_index("dataset")
    assert compat["correct"].tolist() == [2, 0, 0]  # bare YES is wrong on ProntoQA under the released scorer


def test_summary_by_depth_bucket_orders_buckets_and_leaves_out_other_datasets():
    records = pd.DataFrame({
        "dataset": ["fld", "fld", "fld", "fld", "folio"],
        "depth_bucket": ["UNKNOWN", "8-11", "0-3", "8-11", None],
        "correct": [True, False, True, True, True],
        "no_answer": [False, True, False, False, False],
    })
    summary = summarize(records, by=("dataset", "depth_bucket"))
    assert summary["depth_bucket"].tolist() == ["0-3", "8-11", "UNKNOWN"]
    assert summary["n"].tolist() == [1, 2, 1] and summary["correct"].tolist() == [1, 1, 1]
    assert summary["accuracy"].tolist() == [100.0, 50.0, 100.0]
    assert summary["no_answer"].tolist() == [0, 1, 0]


# ------------------------------------------------------------------------------------------------ runs


class Says:
    """A backend that answers every conversation with ``replies`` in turn (cycling); counts calls and sizes."""

    def __init__(self, *replies):
        self.stats = BackendStats()
        self.replies = replies
        self.batches: list[int] = []

    def generate(self, conversations, config=GenerationConfig()):
        self.stats.add(calls=1)
        self.batches.append(len(conversations))
        return [self.replies[i % len(self.replies)] for i in range(len(conversations))]


def _smoke_run(backend, **overrides):
    from finelogic.runs import accuracy

    return accuracy.run("smoke", seed=11, backends={"embedded": backend}, **overrides)


def test_accuracy_run_evaluates_each_setting_on_every_test_item_with_the_handed_in_backend():
    backend = Says("__PROVED__")
    run = _smoke_run(backend)
    records = run.records
    # smoke: 6 FLD + 2 generated ProntoQA items (FOLIO / Multi-LogiEval not present), Direct and CoT
    assert list(records.columns) == [*RECORD_COLUMNS, *FORCED_COLUMNS, *CALIBRATED_COLUMNS] and len(records) == 2 * (6 + 2)
    # Says has no loglikelihood verb: no forced answer, and the records say why
    assert records["forced_correct"].isna().all() and set(records["forced_reason"]) == {NO_LOGLIKELIHOOD}
    assert records["setting"].tolist() == ["Direct"] * 8 + ["CoT"] * 8
    assert set(records["model"]) == {"SmolLM2-135M-Instruct"} and set(records["policy"]) == {"principled"}
    assert records["correct"].tolist() == (records["gold"] == PROVED).tolist()
    assert backend.batches == [8, 8]  # 4 x the section's batch size (8) per generate call
    assert (run.provenance.model_calls, run.provenance.n, run.provenance.models) == (2, 8, ("SmolLM2-135M-Instruct",))
    assert run.sets[["dataset", "n", "generated", "present"]].values.tolist() == [
        ["fld", 6, True, True], ["folio", 0, False, False], ["multi_logieval", 0, False, False],
        ["prontoqa", 2, True, True]]
    assert run.sets["source"].tolist()[1:3] == ["not present", "not present"]
    assert run.traces.empty and run.setting_names == ("Direct", "CoT") and run.decoding.max_new_tokens == 16


class UserTextTemplate(OneTokenPerMessage):
    """As OneTokenPerMessage; rendered as text, the conversation is its user message."""

    def apply_chat_template(self, conversation, add_generation_prompt, tokenize):
        return super().apply_chat_template(conversation, add_generation_prompt, tokenize) if tokenize \
            else conversation[-1]["content"]


class SaysAndScores(Says):
    """Says its replies and scores every marker by a fixed table: DISPROVED is the most likely answer."""

    tokenizer = UserTextTemplate()

    def __init__(self, *replies):
        super().__init__(*replies)
        self.scored: list = []

    def loglikelihood(self, requests):
        self.scored += requests
        table = {"__PROVED__": -2.0, "__DISPROVED__": -1.0, "__UNKNOWN__": -3.0}
        return [(table[marker], 4, False) for _, marker in requests]


def test_accuracy_run_adds_the_forced_choice_answer_of_each_prompt_setting_record_and_can_turn_it_off():
    backend = SaysAndScores("no marker here")
    run = _smoke_run(backend, settings=["Direct", "Sel-Inf"])
    direct, sel_inf = (run.records[run.records["setting"] == s] for s in ("Direct", "Sel-Inf"))
    # Marker extraction finds nothing; forced choice reads DISPROVED everywhere (-1.0 beats -2.0 and -3.0)
    assert direct["prediction"].isna().all() and set(direct["forced_prediction"]) == {DISPROVED}
    assert direct["forced_correct"].tolist() == (direct["gold"] == DISPROVED).tolist()
    assert direct["forced_reason"].isna().all() and direct["forced_ll_disproved"].eq(-1.0).all()
    # 6 FLD items x 3 markers + 2 ProntoQA items x 2 markers, after each response and the cue; then the
    # contextual calibration's three content-free contexts per dataset (no response before the cue)
    assert len(backend.scored) == 6 * 3 + 2 * 2 + 3 * 3 + 3 * 2
    assert all(context.endswith("no marker here\nFinal answer: ") for context, _ in backend.scored[:22])
    assert not any("no marker here" in context for context, _ in backend.scored[22:])
    # a model that scores every context alike has nothing left after calibration: ties go to the first label
    assert set(direct["calibrated_prediction"]) == {PROVED}
    assert direct["calibrated_correct"].tolist() == (direct["gold"] == PROVED).tolist()
    assert sel_inf["calibrated_correct"].isna().all()
    assert sel_inf["forced_correct"].isna().all() and set(sel_inf["forced_reason"]) == {NOT_A_PROMPT_SETTING}
    off = _smoke_run(SaysAndScores("x"), settings=["Direct"], forced_choice=False)
    assert off.records["forced_correct"].isna().all() and off.records["forced_reason"].str.contains("turned off").all()
    assert off.records["calibrated_correct"].isna().all()
    assert off.provenance.settings["forced_choice"] is False and run.provenance.settings["forced_choice"] is True


def test_accuracy_run_overrides_replace_profile_keys_and_unknown_ones_are_refused():
    run = _smoke_run(Says("__PROVED__"), settings=["CoT"], models=None)
    assert set(run.records["setting"]) == {"CoT"} and run.provenance.settings["models"] == ["embedded"]
    with pytest.raises(ValueError, match=r"accuracy\.setting: unknown key; the keys of accuracy are"):
        _smoke_run(Says("x"), setting=["CoT"])


def test_accuracy_run_writes_and_reads_back_the_same_tables(tmp_path):
    from finelogic.runs.accuracy import TABLE2_KEYS, AccuracyRun, table2

    run = _smoke_run(SaysAndScores("__DISPROVED__", ""), settings=["Direct", "Sel-Inf"])
    assert run.records["forced_correct"].notna().any() and run.records["forced_correct"].isna().any()
    paths = run.write(tmp_path / "accuracy")
    assert sorted(p.name for p in paths) == ["eval_sets.json", "forced_summary.csv", "records.csv", "run.json",
                                             "sets.csv", "summary.csv", "traces.csv"]
    back = AccuracyRun.read(tmp_path / "accuracy")
    pd.testing.assert_frame_equal(back.records, run.records)
    summary, forced, calibrated = table2(back.records)  # Table 2's cells are the records' own
    assert back.summary.to_csv(index=False) == summary.to_csv(index=False)
    assert back.forced_summary.to_csv(index=False) == forced.to_csv(index=False) and len(forced)
    assert calibrated[list(TABLE2_KEYS) + ["n"]].equals(forced[list(TABLE2_KEYS) + ["n"]])  # calibrated where forced
    pd.testing.assert_frame_equal(back.sets, run.sets)
    pd.testing.assert_frame_equal(back.traces, run.traces)
    assert back.provenance.as_dict() == run.provenance.as_dict()
    assert len(back.traces) == 8
    assert "" in set(back.records["response"])  # an empty response stays a string


def test_depth_run_reads_the_written_accuracy_run_and_calls_no_model(tmp_path):
    from finelogic.runs import depth

    made = _smoke_run(Says("__PROVED__"))
    made.write()  # results/smoke/accuracy under this test's FINELOGIC_RESULTS
    run = depth.run("smoke", seed=11)
    assert run.provenance.model_calls == 0 and run.provenance.n == 2 * 6
    fld = made.records[made.records["dataset"] == "fld"]
    pd.testing.assert_frame_equal(run.summary, summarize(fld, by=("model", "setting", "depth_bucket")))
    pd.testing.assert_frame_equal(run.compat, summarize(fld, by=("model", "setting", "depth_bucket"),
                                                        correct_column="correct_depth"))
    assert run.summary["n"].sum() == 12 and set(run.summary["setting"]) == {"Direct", "CoT"}
    assert list(run.curves().columns) == ["0-3", "4-7", "8-11", "12-15", "16-19"]
    # Another seed does not match the written run: an error naming the command, or, with models handed in,
    # the accuracy run is made again with them.
    from finelogic.runs.upstream import UpstreamMissing

    with pytest.raises(UpstreamMissing, match=r"made with another seed; make it with `finelogic run --profile smoke "
                                              r"--family accuracy` \(seed 12\)"):
        depth.run("smoke", seed=12)
    backend = Says("__PROVED__")
    again = depth.run("smoke", seed=12, backends={"embedded": backend})
    assert again.provenance.model_calls == backend.stats.calls == 2


def test_depth_run_reports_forced_choice_accuracy_by_bucket_with_chance():
    from finelogic.runs import depth

    run = depth.run("smoke", seed=11, backends={"embedded": SaysAndScores("no marker")})
    fld = run.accuracy_run.records.query("dataset == 'fld'")
    # every FLD record forced to DISPROVED: per bucket, the share of DISPROVED gold items
    expected = fld.assign(hit=fld["gold"] == DISPROVED).groupby(["setting", "depth_bucket"], sort=False)["hit"]
    got = run.forced.set_index(["setting", "depth_bucket"])
    assert run.forced["n"].sum() == 12 and run.forced["chance"].round(1).eq(33.3).all()
    for key, hits in expected:
        assert got.loc[key, "correct"] == hits.sum() and got.loc[key, "n"] == len(hits)
    assert (run.forced["ci_low"] <= run.forced["accuracy"]).all() and (run.forced["accuracy"] <= run.forced["ci_high"]).all()


class Scripted:
    """A backend that hands back the given Completions in turn (cycling) and keeps every conversation."""

    def __init__(self, *completions):
        self.stats = BackendStats()
        self.completions = completions
        self.seen: list = []

    def generate(self, conversations, config=GenerationConfig()):
        self.stats.add(calls=1)
        start = len(self.seen)
        self.seen += conversations
        return [self.completions[(start + i) % len(self.completions)] for i in range(len(conversations))]


def test_empty_and_truncated_completions_are_counted_never_scored():
    # fld-a PROVED, fld-b DISPROVED, fld-c UNKNOWN, pronto-a PROVED, folio-a UNKNOWN
    backend = Scripted(Completion("__PROVED__", "length"), Completion("", "stop"), Completion("", "length"),
                       Completion("__PROVED__", "stop"), Completion("So the answer is __UNKN", "length"))
    records = evaluate_accuracy(PROBLEMS, backend, DIRECT).set_index("id")
    assert records["finish_reason"].tolist() == ["length", "stop", "length", "stop", "length"]
    assert records["no_output"].tolist() == [False, True, True, False, False]
    assert records["truncated"].tolist() == [True, False, False, False, True]  # an empty text is no output
    assert records["no_answer"].tolist() == [False] * 5  # the three kinds exclude each other
    # principled: only the finished pronto-a response is read; the right marker in fld-a's cut-off text is not
    assert _listed(records["prediction"]) == [None, None, None, PROVED, None]
    assert records["correct"].tolist() == [False, False, False, True, False]
    # released scorers: an empty text is not scored (the vLLM scorer would call fld-c's "" a right UNKNOWN) ...
    assert _listed(records["prediction_compat"]) == [PROVED, None, None, PROVED, UNKNOWN]
    assert records["correct_compat"].tolist() == [True, False, False, True, True]
    # ... a cut-off text is scored as the released code would: folio-a's "__UNKN" is no marker, UNKNOWN default
    assert records["correct_api"].tolist() == [True, False, False, True, False]
    assert records["correct_depth"].tolist() == [True, False, False, True, False]
    summary = summarize(records.reset_index()).set_index("dataset")
    assert summary.loc["fld", ["n", "correct", "no_answer", "no_output", "truncated"]].tolist() == [3, 0, 0, 2, 1]
    assert summary.loc["folio", ["n", "correct", "truncated"]].tolist() == [1, 0, 1]


def test_plain_strings_have_no_finish_reason_and_count_as_finished():
    records = evaluate_accuracy(PROBLEMS[:1], Scripted("__PROVED__"), DIRECT)
    assert _listed(records["finish_reason"]) == [None] and not records["truncated"].any()
    assert records["correct"].tolist() == [True]


def test_smoke_accuracy_run_sends_the_released_prompts_under_released():
    from finelogic.prompts import RELEASED_COT_SUFFIX, SYSTEM_PROMPT_TWO_LABELS_DIRECT, SYSTEM_PROMPT_THREE_LABELS

    backend = Scripted(Completion("__PROVED__", "stop"))
    run = _smoke_run(backend, prompt_layout="released")
    assert set(run.records["layout"]) == {"released"} and run.prompt_layout == "released"
    assert run.provenance.settings["prompt_layout"] == "released"
    direct, cot = backend.seen[:8], backend.seen[8:]  # 6 FLD + 2 ProntoQA items per setting
    # no item carries an ``input``: Facts/Hypothesis, then "\n" and the suffix (empty for Direct)
    assert all(c[1]["content"].startswith("Facts: fact1: ") for c in backend.seen)
    assert all(c[1]["content"].endswith("\n") and not c[1]["content"].endswith("\n\n") for c in direct)
    assert all(c[1]["content"].endswith("\n" + RELEASED_COT_SUFFIX) for c in cot)
    assert [c[0]["content"] for c in direct] == [SYSTEM_PROMPT_THREE_LABELS] * 6 + [SYSTEM_PROMPT_TWO_LABELS_DIRECT] * 2


def test_smoke_accuracy_run_sends_our_prompts_by_default():
    from finelogic.prompts import SYSTEM_PROMPT_TWO_LABELS

    backend = Scripted(Completion("__PROVED__", "stop"))
    run = _smoke_run(backend)
    assert set(run.records["layout"]) == {"principled"} and run.provenance.settings["prompt_layout"] == "principled"
    assert all(c[1]["content"].endswith("\nLet's think step by step.") for c in backend.seen[8:])
    assert backend.seen[7][0]["content"] == SYSTEM_PROMPT_TWO_LABELS  # ProntoQA, Direct
    with pytest.raises(ValueError, match="prompt_layout: expected one of principled, released, got 'paper'"):
        _smoke_run(backend, prompt_layout="paper")


def test_a_model_entry_names_its_released_scorer_which_is_taken_out_before_opening():
    from finelogic.runs.accuracy import split_scorers

    entries, scorers = split_scorers(["embedded", {"name": "GPT-4o", "kind": "openai", "model": "gpt-4o",
                                                   "scorer": "api"}])
    assert entries == ["embedded", {"name": "GPT-4o", "kind": "openai", "model": "gpt-4o"}]
    assert scorers == ["vllm_overall", "api"]
    with pytest.raises(ValueError, match="unknown scorer 'depth'"):
        split_scorers([{"name": "x", "kind": "embedded", "scorer": "depth"}])
    backend = Scripted(Completion("__PROVED__", "stop"))
    from finelogic.runs import accuracy

    run = accuracy.run("smoke", seed=11, backends={"GPT-4o": backend}, settings=["Direct"],
                       models=[{"name": "GPT-4o", "kind": "openai", "model": "gpt-4o", "scorer": "api"}])
    assert set(run.records["compat_scorer"]) == {"api"} and set(run.records["model"]) == {"GPT-4o"}


def test_the_paper_profile_reproduces_the_released_prompts_and_scores_api_models_with_the_api_scorer():
    from finelogic.runs.accuracy import resolved_config, split_scorers

    section = resolved_config("paper", {})
    assert section.prompt_layout == "released"
    names = [m["name"] if isinstance(m, dict) else m for m in section.models]
    assert dict(zip(names, split_scorers(section.models)[1])) == {
        "Llama-3.1-8B-Instruct": "vllm_overall", "Qwen-2.5-7B-Instruct": "vllm_overall",
        "GPT-4o": "api", "DeepSeek-R1": "api"}
    assert resolved_config("smoke", {}).prompt_layout == "principled"


# ------------------------------------------------------------------------------------------------ pages


def test_table2_puts_the_papers_value_beside_ours_and_names_the_datasets():
    from finelogic.book.accuracy import table2

    records = evaluate_accuracy(PROBLEMS, FakeBackend(), DIRECT, model="GPT-4o")
    ours = summarize(records, by=("model", "setting", "dataset"))
    table = table2(ours)
    assert list(table.index) == [("GPT-4o", "Direct", "FLD"), ("GPT-4o", "Direct", "ProntoQA"),
                                 ("GPT-4o", "Direct", "FOLIO")]
    assert list(table.columns) == ["paper", "ours", "95% CI", "n", "no answer", "no output", "truncated"]
    assert table["ours"].tolist() == [33.3, 100.0, 100.0] and table["no answer"].tolist() == [1, 0, 0]
    assert table["no output"].tolist() == [0, 0, 0] and table["truncated"].tolist() == [0, 0, 0]


def test_policy_table_shows_each_model_under_the_released_scorer_the_paper_used_for_it():
    from finelogic.book.accuracy import policy_table

    records = pd.concat([evaluate_accuracy(PROBLEMS, FakeBackend(), DIRECT, model="GPT-4o", compat_scorer="api"),
                         evaluate_accuracy(PROBLEMS, FakeBackend(), DIRECT, model="Llama")], ignore_index=True)
    table = policy_table(records)
    assert list(table.columns) == ["n", "principled (%)", "released code (%)", "released scorer", "no answer",
                                   "no output", "truncated"]
    assert table["principled (%)"].tolist() == [33.3, 100.0, 100.0] * 2
    # API: FLD only fld-a (fld-c has no underscored marker, no UNKNOWN default); bare YES is no marker.
    assert table.loc["GPT-4o", "released code (%)"].tolist() == [33.3, 0.0, 0.0]
    # vLLM: fld-c reads as UNKNOWN (right); YES is wrong on ProntoQA; FOLIO's first marker in order is PROVED.
    assert table.loc["Llama", "released code (%)"].tolist() == [66.7, 0.0, 0.0]
    assert set(table.loc["GPT-4o", "released scorer"]) == {"API (evaluate_api.py)"}
    assert set(table.loc["Llama", "released scorer"]) == {"vLLM overall (eval_vllm_overall.py)"}


def test_table5_puts_the_released_depth_scorer_beside_the_principled_reading():
    from finelogic.book.accuracy import table5

    # fld-a PROVED (depth 2), fld-b DISPROVED (depth 9), fld-c UNKNOWN: both markers are right for the
    # depth scorer on the first two; the principled last marker is right on fld-b only; fld-c is empty.
    backend = Scripted(Completion("__PROVED__ __DISPROVED__", "stop"), Completion("__PROVED__ __DISPROVED__", "stop"),
                       Completion("", "stop"))
    records = evaluate_accuracy(PROBLEMS[:3], backend, DIRECT, model="ours")
    by = ("model", "setting", "depth_bucket")
    table = table5(summarize(records, by), summarize(records, by, correct_column="correct_depth"))
    assert list(table.index.get_level_values("depth_bucket")) == ["0-3", "8-11", "UNKNOWN"]
    assert table["ours"].tolist() == [0.0, 100.0, 0.0]
    assert table["released depth (process_result_by_step.py) (%)"].tolist() == [100.0, 100.0, 0.0]
    assert table["no output"].tolist() == [0, 0, 1]


def test_accuracy_and_depth_tables_show_forced_choice_with_its_n_interval_and_chance():
    from finelogic.book.accuracy import table2_view, table5_view
    from finelogic.eval.forced_choice import forced_choice, summarize_forced

    # fld-a, fld-b, fld-c: no marker anywhere; forced choice reads DISPROVED (-1.0 beats -2.0, -3.0): right on fld-b
    backend = SaysAndScores("I am not sure.")
    records = evaluate_accuracy(PROBLEMS[:3], backend, COT, model="ours")
    records = records.join(forced_choice(PROBLEMS[:3], records, backend))
    by = ("model", "setting", "dataset")
    table = table2_view(summarize(records, by), summarize_forced(records, by))
    # One model, no paper row, nothing cut, forced choice on every response: those columns go to the note.
    assert list(table.frame.columns) == ["Setting", "Dataset", "Ours [95% CI]", "n", "No answer", "Forced [95% CI]"]
    assert table.frame[["Ours [95% CI]", "n", "Forced [95% CI]"]].values.tolist() == [
        ["0.0 [0.0, 56.1]", "3", "33.3 [6.1, 79.2]"]]
    assert any("Model: ours" in n and "forced choice scored every response" in n and "chance: 33.3% on FLD" in n
               for n in table.notes)
    by = ("model", "setting", "depth_bucket")
    depth = table5_view(summarize(records, by), None, summarize_forced(records, by))
    assert depth.frame["Forced [95% CI]"].tolist() == ["0.0 [0.0, 79.3]", "100.0 [20.7, 100.0]", "0.0 [0.0, 79.3]"]
    assert "Chance" not in depth.frame and any("chance: 33.3%" in n for n in depth.notes)
    assert any("our addition" in n for n in depth.notes)


def test_data_note_names_every_source_and_the_absent_sets():
    from finelogic.book.accuracy import data_note

    sets = pd.DataFrame({"paper_name": ["FLD", "FOLIO"], "source": ["generated (fld)", "not present"],
                         "present": [True, False]})
    assert data_note(sets) == (" Data: FLD: generated (fld); FOLIO: not present. **Not present** (no files, "
                               "nothing substituted): FOLIO.")


def test_the_supervision_runs_fine_tuned_models_are_evaluated_as_table_2_rows(tmp_path, monkeypatch):
    from finelogic.runs import accuracy
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.upstream import UpstreamMissing
    from finelogic.runs.supervision import SupervisionRun

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    for name in ("embedded-SFT-NL-abc", "embedded-LogiPT-def"):
        (tmp_path / "cache" / "sft" / name).mkdir(parents=True)
        (tmp_path / "cache" / "sft" / name / "train_log.json").write_text("{}")
    training = pd.DataFrame({"setting": ["SFT-NL", "LogiPT"], "checkpoint": ["embedded-SFT-NL-abc", "embedded-LogiPT-def"]})
    made = SupervisionRun(Provenance("supervision", "smoke", 11), training=training)
    tuned, logipt = Says("__DISPROVED__"), Says("__UNKNOWN__")
    run = accuracy_with(made, tuned, logipt)
    fld = run.records[run.records["dataset"] == "fld"]
    rows = fld.groupby("setting", sort=False)["prediction"].agg(lambda p: sorted(set(p)))
    assert list(rows.index) == ["CoT", "SFT-NL", "LogiPT"]  # the base model's setting, then the fine-tuned rows
    assert rows["SFT-NL"] == ["DISPROVED"] and rows["LogiPT"] == ["UNKNOWN"]
    assert set(run.records["model"]) == {"SmolLM2-135M-Instruct"}  # rows of the base model, as in Table 2
    assert run.provenance.models == ("SmolLM2-135M-Instruct", "SFT-NL", "LogiPT")
    # without a supervision run handed in: the profile's models only
    alone = accuracy.run("smoke", seed=11, settings=["CoT"],
                         backends={"embedded": Says("__PROVED__")})
    assert set(alone.records["setting"]) == {"CoT"} and alone.provenance.models == ("SmolLM2-135M-Instruct",)
    # a checkpoint missing from this cache: the command that makes it
    (tmp_path / "cache" / "sft" / "embedded-LogiPT-def" / "train_log.json").unlink()
    with pytest.raises(FileNotFoundError, match="LogiPT: checkpoint .* `finelogic run --profile smoke --family "
                                                "supervision`"):
        accuracy_with(made, tuned, logipt)


def accuracy_with(made, tuned, logipt):
    from finelogic.runs import accuracy

    return accuracy.run("smoke", seed=11, settings=["CoT"], supervision_run=made,
                        backends={"embedded": Says("__PROVED__"), "SFT-NL": tuned, "LogiPT": logipt})


class SaysAndKeepsCaps(Says):
    """Says its replies and keeps the token cap of every call."""

    def __init__(self, *replies):
        super().__init__(*replies)
        self.caps: list[int] = []

    def generate(self, conversations, config=GenerationConfig()):
        self.caps.append(config.max_new_tokens)
        return super().generate(conversations, config)


def test_the_fine_tuned_models_decode_with_their_own_token_cap_and_the_base_model_with_its_own(tmp_path, monkeypatch):
    from finelogic.runs import accuracy
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.supervision import SupervisionRun

    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "sft" / "embedded-SFT-NL-abc").mkdir(parents=True)
    (tmp_path / "cache" / "sft" / "embedded-SFT-NL-abc" / "train_log.json").write_text("{}")
    made = SupervisionRun(Provenance("supervision", "smoke", 11),
                          training=pd.DataFrame({"setting": ["SFT-NL"], "checkpoint": ["embedded-SFT-NL-abc"]}))
    base, tuned = SaysAndKeepsCaps("__PROVED__"), SaysAndKeepsCaps("__DISPROVED__")
    run = accuracy.run("smoke", seed=11, settings=["CoT"],
                       fine_tuned_generation={"max_new_tokens": 48}, supervision_run=made,
                       backends={"embedded": base, "SFT-NL": tuned})
    cap = accuracy.PROFILES["smoke"].generation.max_new_tokens
    assert set(base.caps) == {cap} and set(tuned.caps) == {48}
    assert run.provenance.settings["fine_tuned_generation"] == {"max_new_tokens": 48}
    with pytest.raises(ValueError, match="fine_tuned_generation.max_tokens: unknown decoding key"):
        accuracy.run("smoke", seed=11, settings=["CoT"],
                     fine_tuned_generation={"max_tokens": 48}, supervision_run=made,
                     backends={"embedded": base, "SFT-NL": tuned})
