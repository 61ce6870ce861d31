"""Inference-time baselines (paper §5.1, Appendix A.2): Selection-Inference, Logic-LM, SymbCoT, LogiPT data.

A scripted backend plays the model: it reads which prompt it got (by its system message) and which
problem (by the hypothesis in the problem-specific end of the prompt) and answers from the problem's gold
proof and formulas, or with what a test tells it to. No neural model is loaded.
"""
from __future__ import annotations

import json
import re
import sqlite3

import pandas as pd
import pytest

from finelogic.baselines import (
    BASELINE_SETTINGS,
    logic_lm,
    logipt_data,
    parse_translation,
    selection_inference,
    solve,
    solver_trace,
    symbcot,
)
from finelogic.baselines.common import gold_derivation
from finelogic.baselines.logic_lm import TRANSLATION_SYSTEM, gold_translation
from finelogic.baselines.logipt import LogiPTDataError
from finelogic.baselines.selection_inference import INFERENCE_SYSTEM, SELECTION_SYSTEM, parse_inference
from finelogic.baselines.symbcot import PLAN_SOLVE_INSTRUCTIONS, VERIFY_INSTRUCTIONS
from finelogic.data.generators.fld import generate_fld_problem
from finelogic.data.generators.prontoqa import generate_prontoqa
from finelogic.data.problem import DISPROVED, PROVED, UNKNOWN, Fact, Problem
from finelogic.eval.forced_choice import CALIBRATED_COLUMNS, FORCED_COLUMNS, NOT_A_PROMPT_SETTING
from finelogic.eval.accuracy import RECORD_COLUMNS, summarize
from finelogic.eval.extraction import extract_answer
from finelogic.eval.judges import SymbolicJudge
from finelogic.eval.soundness import judge_responses, soundness_table
from finelogic.eval.steps import parse_steps
from finelogic.models.base import BackendStats, GenerationConfig
from finelogic.models.cache import CachedBackend
from finelogic.prompts import MARKERS, labels_for
from finelogic.runs import accuracy
from finelogic.runs.accuracy import BASELINES

# Smoke-size problems: FLD-style of each label (depths 1-2) and two ProntoQA-style ones.
FLD = [generate_fld_problem(f"baselines/{label}/{d}", d, label, distractors=(1, 2),
                            problem_id=f"fld-{label.lower()}-{d}")
       for label in (PROVED, DISPROVED, UNKNOWN) for d in (1, 2)]
PRONTOQA = generate_prontoqa(2, seed=3, hops=(2,))
PROBLEMS = FLD + PRONTOQA
CONFIG = GenerationConfig(max_new_tokens=32)

_QUERY_START = ("Now your turn.\n", "Now translate this problem.\n", "Now this problem.\n")


class ScriptedModel:
    """A fake backend answering each prompt from the problem's gold proof and formulas.

    ``translations`` maps a problem id to a list of translation replies (one per attempt; the last one
    repeats); other problems get their correct translation. ``stats.calls`` counts ``generate`` calls,
    ``batches`` their sizes, ``prompts`` every conversation seen.
    """

    def __init__(self, problems=PROBLEMS, translations=None):
        self.stats = BackendStats()
        self.model_name = "scripted"
        self.by_hypothesis = {p.hypothesis: p for p in problems}
        self.translations = translations or {}
        self.attempts: dict[str, int] = {}
        self.batches: list[int] = []
        self.prompts: list[list[dict]] = []

    def generate(self, conversations, config=GenerationConfig()):
        self.stats.add(calls=1)
        self.batches.append(len(conversations))
        self.prompts.extend(conversations)
        return [self._reply(c) for c in conversations]

    def _problem(self, query: str) -> Problem | None:
        hypothesis = re.search(r"^Hypothesis: (.*)$", query, re.M).group(1)
        return self.by_hypothesis.get(hypothesis)

    def _reply(self, conversation) -> str:
        system = conversation[0]["content"]
        user = next(m["content"] for m in reversed(conversation) if m["role"] == "user"
                    and "Hypothesis:" in m["content"])
        query = user
        for start in _QUERY_START:
            query = query.split(start)[-1]
        problem = self._problem(query)
        if problem is None:  # a problem this script does not know: plausible but uninformed replies
            return {SELECTION_SYSTEM: "fact1 & fact2", INFERENCE_SYSTEM: "hypothesis"}.get(system, "__PROVED__")
        steps = gold_derivation(problem)
        if system == SELECTION_SYSTEM:
            done = len(re.findall(r"^int\d+:", query.split("Derived so far:")[1], re.M))
            return " & ".join(steps[done].premises) if done < len(steps) else "fact1"
        if system == INFERENCE_SYSTEM:
            selected = tuple(re.findall(r"^((?:fact|int)\d+):", query, re.M))
            step = next((s for s in steps if s.premises == selected), None)
            if step is None:  # nothing to infer (UNKNOWN items): restate the first selected fact
                return re.search(r"^(?:fact|int)\d+: (.*)$", query, re.M).group(1)
            return step.text if step.text is not None else step.conclusion
        if system == TRANSLATION_SYSTEM:
            if len(conversation) > 2:
                self.attempts[problem.id] = self.attempts.get(problem.id, 0) + 1
            scripted = self.translations.get(problem.id)
            if scripted is None:
                return gold_translation(problem)
            return scripted[min(self.attempts.get(problem.id, 0), len(scripted) - 1)]
        if PLAN_SOLVE_INSTRUCTIONS in system:
            return "Plan:\n1. Follow the rules.\nSolution:\n" + "\n".join(s.fld(formal=True) for s in steps) \
                + f"\n{MARKERS[problem.label]}"
        if VERIFY_INSTRUCTIONS in system:
            return f"Translation check: fine.\nVerified answer: {MARKERS[problem.label]}"
        return f"The answer follows. {MARKERS[problem.label]}"  # Sel-Inf answer prompt, Direct fallback


@pytest.fixture(autouse=True)
def _own_results(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))


def _well_formed(records: pd.DataFrame, setting: str, problems=PROBLEMS) -> None:
    assert list(records.columns) == list(RECORD_COLUMNS)
    assert list(records["id"]) == [p.id for p in problems]
    assert set(records["setting"]) == {setting} and set(records["model"]) == {"scripted"}
    assert (records["prompt_chars"] > 0).all() and (records["completion_chars"] > 0).all()


# ------------------------------------------------------------------------------------------ Selection-Inference


def test_selection_inference_follows_the_script_to_the_right_labels_and_keeps_traces():
    result = selection_inference(PROBLEMS, ScriptedModel(), CONFIG, rounds=4)
    records, traces = result.records, result.traces
    _well_formed(records, "Sel-Inf")
    assert records["correct"].all()
    assert [t["id"] for t in traces] == [p.id for p in PROBLEMS]
    proved = traces[1]  # fld-proved-2: its gold proof, rebuilt by selection and inference
    assert proved["proof"] == FLD[1].proof
    assert proved["stopped"] == "hypothesis reached"
    assert [c["stage"] for c in proved["calls"]][:2] == ["select-1", "infer-1"]
    assert proved["calls"][-1]["stage"] == "answer"


def test_selection_inference_responses_are_fld_proofs_the_symbolic_judge_finds_sound():
    records = selection_inference(FLD, ScriptedModel(), CONFIG, rounds=4).records
    fld_proved = FLD[1]
    steps = parse_steps(records.loc[1, "response"], fld_proved)
    assert [s.format() for s in steps] == [s.fld() for s in gold_derivation(fld_proved)]
    verdicts = SymbolicJudge().judge_all([(s, fld_proved) for s in steps])
    assert all(v.valid and v.atomic for v in verdicts)
    labelled = records[records["gold"] != UNKNOWN]
    table = soundness_table(judge_responses(labelled, {p.id: p for p in FLD}, SymbolicJudge()))
    assert table.loc[0, ["samples", "scored", "all_valid", "all_atomic", "all_relevant"]].tolist() == [4, 4, 1, 1, 1]
    assert records.loc[1, "response"].endswith("-> hypothesis;\n__PROVED__")


def test_selection_inference_sends_two_calls_per_round_and_one_answer_call_whatever_the_number_of_problems():
    few, many = ScriptedModel(), ScriptedModel()
    selection_inference(PROBLEMS[:2], few, CONFIG, rounds=5)
    selection_inference(PROBLEMS, many, CONFIG, rounds=5)
    # Gold proofs here have 0-3 steps. Round 1 ends the one-step proofs (hypothesis reached) and the UNKNOWN
    # items (the script restates a fact: no new statement); round 2 ends the two-step ones, round 3 the one
    # three-step proof (fld-disproved-2); then one answer call. Calls follow the rounds, not the problems.
    assert many.batches == [8, 8, 4, 4, 1, 1, 8] and few.batches == [2, 2, 1, 1, 2]
    assert (few.stats.calls, many.stats.calls) == (2 * 2 + 1, 2 * 3 + 1)


def test_selection_inference_stops_at_the_round_limit_and_still_answers():
    model = ScriptedModel()
    trace = selection_inference(FLD[1:2], model, CONFIG, rounds=1).traces[0]
    assert trace["stopped"] == "round limit" and trace["proof"] == FLD[1].proof.split("; ")[0] + ";"  # step 1 only
    assert [c["stage"] for c in trace["calls"]] == ["select-1", "infer-1", "answer"]


def test_selection_caps_step_replies_and_answers_with_the_full_config():
    seen = []

    class Recording(ScriptedModel):
        def generate(self, conversations, config=GenerationConfig()):
            seen.append(config.max_new_tokens)
            return super().generate(conversations, config)

    selection_inference(FLD[:2], Recording(FLD), GenerationConfig(max_new_tokens=200), rounds=3,
                        step_max_new_tokens=40)
    assert seen[:-1] == [40] * (len(seen) - 1) and seen[-1] == 200


@pytest.mark.parametrize("reply, parsed", [
    ("hypothesis", ("hypothesis", None)),
    ("¬hypothesis", ("¬hypothesis", None)),
    ("Inference: not hypothesis", ("¬hypothesis", None)),
    ("int3: the cat is red.\nmore text", (None, "the cat is red.")),
    ("the cat -> the dog; __PROVED__", (None, "the cat implies the dog,")),
    ("   ", (None, None)),
])
def test_inference_replies_become_proof_safe_conclusions(reply, parsed):
    assert parse_inference(reply) == parsed


# ------------------------------------------------------------------------------------------ Logic-LM


CAT = Problem(id="cat", dataset="fld", facts=(Fact("fact1", "the cat is red."),
                                              Fact("fact2", "if the cat is red then the cat is big.")),
              hypothesis="the cat is big.", label=PROVED)


@pytest.mark.parametrize("hypothesis, label", [("{B}{a}", PROVED), ("¬{B}{a}", DISPROVED), ("{C}{a}", UNKNOWN)])
def test_hand_written_translations_get_the_solvers_label(hypothesis, label):
    text = f"Symbols: {{A}} = red, {{B}} = big, {{a}} = the cat\nfact1: {{A}}{{a}}\nfact2: `{{A}}{{a}} -> {{B}}{{a}}`\n" \
           f"hypothesis: {hypothesis}."
    translation = parse_translation(text, CAT)
    assert translation.ok and set(translation.facts) == {"fact1", "fact2"}
    assert solve(translation) == (label, None)


@pytest.mark.parametrize("text, message", [
    ("fact1: {A}{a} &\nhypothesis: {B}{a}", "fact1: expected a formula"),
    ("fact1: {A}{a}\nfact7: {B}{a}\nhypothesis: {B}{a}", "fact7 is not a fact of this problem (its facts are fact1 to fact2)"),
    ("fact1: {A}{a}", "the hypothesis is not translated"),
    ("hypothesis: {B}{a}", "no fact is translated"),
    ("fact1: {A}{a}\nfact1: {B}{a}\nhypothesis: {B}{a}", "fact1 is translated twice"),
    ("fact1: {A}{a}\nfact2: ¬{A}{a}\nhypothesis: {B}{a}", "contradict each other"),
])
def test_bad_translations_get_an_error_message_and_no_label(text, message):
    label, error = solve(parse_translation(text, CAT))
    assert label is None and message in error


def test_logic_lm_with_correct_translations_gets_every_label_right_without_fallback():
    model = ScriptedModel()
    result = logic_lm(PROBLEMS, model, CONFIG)
    records, traces = result.records, result.traces
    _well_formed(records, "Logic-LM")
    assert list(records["prediction"]) == [p.label for p in PROBLEMS]
    assert model.stats.calls == 1  # every translation in one call; nothing to refine, nothing to fall back
    assert [t["solver"] for t in traces] == [p.label for p in PROBLEMS]
    assert not any(t["fallback"] for t in traces) and {t["refinements"] for t in traces} == {0}
    assert traces[0]["formulas"]["hypothesis"] == FLD[0].formulas["hypothesis"]
    assert records.loc[0, "response"].endswith(f"Solver: the translated facts entail the hypothesis.\n__PROVED__")


def test_malformed_translations_are_refined_with_the_error_then_fall_back_to_direct():
    broken, fixed = FLD[0], FLD[2]
    model = ScriptedModel(translations={broken.id: ["fact1: {A}{a} &&\nhypothesis: {A}{a}"],
                                        fixed.id: ["fact1: ({A}{a}\nhypothesis: {A}{a}", gold_translation(fixed)]})
    result = logic_lm([broken, fixed, FLD[4]], model, CONFIG, refinements=2)
    records, traces = result.records, {t["id"]: t for t in result.traces}
    assert model.batches == [3, 2, 1, 1]  # translate all, refine both failures, refine the broken one, fall back
    refine_prompts = [c[-1]["content"] for c in model.prompts if len(c) == 4]
    assert len(refine_prompts) == 3 and all("This translation has an error:" in p for p in refine_prompts)
    assert "fact1: expected a formula" in refine_prompts[0]  # the parser's message, position included
    assert traces[broken.id]["fallback"] and traces[broken.id]["refinements"] == 2
    assert len(traces[broken.id]["errors"]) == 3 and traces[broken.id]["solver"] is None
    assert traces[broken.id]["calls"][-1]["stage"] == "fallback-direct"
    assert not traces[fixed.id]["fallback"] and traces[fixed.id]["refinements"] == 1
    assert traces[fixed.id]["solver"] == fixed.label
    assert sum(t["fallback"] for t in traces.values()) == 1
    # The fallback's answer is the direct prompt's reply (the script answers the gold label there).
    assert records.set_index("id").loc[broken.id, "response"] == f"The answer follows. {MARKERS[broken.label]}"


def test_logic_lm_with_no_refinements_falls_back_at_once():
    model = ScriptedModel(translations={FLD[0].id: ["nonsense"]})
    trace = logic_lm(FLD[:1], model, CONFIG, refinements=0).traces[0]
    assert model.batches == [1, 1] and trace["fallback"] and trace["refinements"] == 0


# ------------------------------------------------------------------------------------------ SymbCoT


def test_symbcot_sends_three_batched_prompts_and_reads_the_verifiers_marker():
    model = ScriptedModel()
    result = symbcot(PROBLEMS, model, CONFIG)
    records, trace = result.records, result.traces[0]
    _well_formed(records, "SymbCoT")
    assert model.batches == [len(PROBLEMS)] * 3
    assert records["correct"].all()
    assert [c["stage"] for c in trace["calls"]] == ["translate", "plan-solve", "verify"]
    assert trace["translation_errors"] == [] and trace["formulas"]["hypothesis"] == FLD[0].formulas["hypothesis"]
    assert "\n\nVerification:\n" in records.loc[0, "response"]


# ------------------------------------------------------------------------------------------ shared machinery


@pytest.mark.parametrize("setting", BASELINE_SETTINGS)
def test_a_warm_rerun_through_the_response_cache_makes_no_model_calls(setting, tmp_path):
    model = ScriptedModel()
    cached = CachedBackend(model, tmp_path / f"{setting}.jsonl", "scripted")
    first = BASELINES[setting](PROBLEMS, cached, CONFIG, model="scripted")
    calls = model.stats.calls
    assert calls > 0
    again = BASELINES[setting](PROBLEMS, cached, CONFIG, model="scripted")
    assert model.stats.calls == calls
    assert again.records["response"].tolist() == first.records["response"].tolist()
    assert again.traces == first.traces


class CountingMemo(dict):
    """A memo mapping that counts what a baseline reads from it and what it adds (each addition is one parse,
    plus one solver run for Logic-LM)."""

    def __init__(self):
        super().__init__()
        self.found = self.added = 0

    def get(self, key, default=None):
        self.found += key in self
        return super().get(key, default)

    def __setitem__(self, key, value):
        self.added += 1
        super().__setitem__(key, value)


def _broken_translations():
    # Some replies fail to parse and are refined, so the memo holds errors as well as solver labels.
    return {FLD[0].id: ["fact1: {A}{a} &&\nhypothesis: {A}{a}"],
            FLD[2].id: ["fact1: ({A}{a}\nhypothesis: {A}{a}", gold_translation(FLD[2])]}


@pytest.mark.parametrize("baseline", [logic_lm, symbcot])
def test_a_rerun_over_the_same_memo_reads_every_translation_and_gives_the_same_records(baseline):
    plain = baseline(PROBLEMS, ScriptedModel(translations=_broken_translations()), CONFIG)
    memo = CountingMemo()
    first = baseline(PROBLEMS, ScriptedModel(translations=_broken_translations()), CONFIG, memo=memo)
    parsed, found = memo.added, memo.found
    # Logic-LM: 8 translations, then FLD[0]'s broken reply twice more (read, not parsed again) and FLD[2]'s
    # corrected one; SymbCoT: 8 translations
    assert (parsed, found) == ((9, 2) if baseline is logic_lm else (8, 0))
    again = baseline(PROBLEMS, ScriptedModel(translations=_broken_translations()), CONFIG, memo=memo)
    assert memo.added == parsed and memo.found == found + parsed + found  # every reply read, none parsed
    for result in (first, again):
        assert result.records.drop(columns="seconds").equals(plain.records.drop(columns="seconds"))
        assert result.traces == plain.traces


def test_a_kept_solver_result_is_what_logic_lm_reports():
    memo = {}
    logic_lm(FLD[:1], ScriptedModel(), CONFIG, memo=memo)
    (key, kept), = memo.items()
    assert kept["label"] == FLD[0].label and kept["error"] is None
    memo[key] = {**kept, "label": UNKNOWN}  # what a rerun reads is what it reports: nothing is solved again
    again = logic_lm(FLD[:1], ScriptedModel(), CONFIG, memo=memo)
    assert again.traces[0]["solver"] == UNKNOWN and again.records.loc[0, "prediction"] == UNKNOWN


def test_an_accuracy_run_keeps_the_baselines_translations_in_a_memo_its_rerun_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path / "cache"))
    runs, sizes = [], []
    for _ in range(2):
        runs.append(accuracy.run("smoke", seed=11, backends={"embedded": ScriptedModel()},
                                 settings=["Logic-LM", "SymbCoT"]))
        with sqlite3.connect(tmp_path / "cache" / "store.sqlite") as db:  # as `sqlite3 store.sqlite` shows it
            sizes.append(db.execute("SELECT count(*) FROM memos WHERE memo = 'baseline-translations'").fetchone()[0])
    assert sizes[0] > 0 and sizes[1] == sizes[0]  # one result per distinct reply and baseline; the rerun adds none
    first, again = (r.records.drop(columns="seconds") for r in runs)
    assert again.equals(first) and runs[1].traces.equals(runs[0].traces)


def test_unknown_settings_and_unlabelled_problems_are_refused_by_name():
    with pytest.raises(ValueError, match="accuracy: settings: unknown setting 'ToT'; choose prompt settings"):
        accuracy.run("smoke", backends={"embedded": ScriptedModel()}, settings=["ToT"])
    choice = Problem(id="lm-1", dataset="logicmark", facts=(), hypothesis="a = b", options=("x", "y"), answer_index=0)
    model = ScriptedModel()
    with pytest.raises(ValueError, match="lm-1"):
        logic_lm([choice], model)
    assert model.stats.calls == 0


def test_baselines_write_no_file_and_their_records_read_like_any_other(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    records = symbcot(PROBLEMS, ScriptedModel(), CONFIG, model="scripted").records
    assert list(tmp_path.rglob("*")) == []  # no results folder, no traces file
    assert list(records.columns) == list(RECORD_COLUMNS)
    summary = summarize(records).set_index("dataset")
    assert summary.loc["fld", ["n", "correct"]].tolist() == [6, 6]


def test_accuracy_run_accepts_the_baselines_setting_names(tmp_path):
    model = ScriptedModel()
    run = accuracy.run("smoke", seed=11, backends={"embedded": model},
                       settings=["Sel-Inf", "Logic-LM", "SymbCoT"])
    n = run.provenance.n
    assert n == 6 + 2 and len(run.records) == 3 * n
    assert run.records["setting"].tolist() == ["Sel-Inf"] * n + ["Logic-LM"] * n + ["SymbCoT"] * n
    # the records of any accuracy run, plus forced choice's columns, which a baseline leaves unscored
    assert list(run.records.columns) == [*RECORD_COLUMNS, *FORCED_COLUMNS, *CALIBRATED_COLUMNS]
    assert run.records["forced_prediction"].isna().all()
    assert set(run.records["forced_reason"]) == {NOT_A_PROMPT_SETTING}
    assert set(run.records["model"]) == {"SmolLM2-135M-Instruct"}  # the profile's model, as the tables print it
    assert run.provenance.model_calls == model.stats.calls > 0
    assert run.traces["setting"].tolist() == run.records["setting"].tolist()
    sel_inf = [json.loads(text) for text in run.traces.loc[run.traces["setting"] == "Sel-Inf", "trace"]]
    assert [t["id"] for t in sel_inf] == run.records["id"].tolist()[:n]
    assert {t["model"] for t in sel_inf} == {"SmolLM2-135M-Instruct"} and "proof" in sel_inf[0]


# ------------------------------------------------------------------------------------------ LogiPT data


def test_logipt_examples_are_deterministic_chat_triples_ending_with_the_label_marker():
    first, again = logipt_data(PROBLEMS), logipt_data(PROBLEMS)
    assert first == again and [e["id"] for e in first] == [p.id for p in PROBLEMS]
    for example, problem in zip(first, PROBLEMS):
        assert example["style"] == "LogiPT"
        assert [m["role"] for m in example["messages"]] == ["system", "user", "assistant"]
        trace = example["messages"][2]["content"]
        assert trace.splitlines()[-1] == MARKERS[problem.label]
        labels = labels_for(problem.dataset)
        assert extract_answer(trace, "principled", labels) == problem.label
        assert extract_answer(trace, "released", labels) == problem.label


def test_logipt_trace_steps_are_the_gold_proof_with_formulas_and_rules():
    trace = solver_trace(FLD[1])
    steps = parse_steps(trace, FLD[1])
    assert [s.format() for s in steps] == [s.fld() for s in gold_derivation(FLD[1])]
    assert all(v.valid and v.atomic for v in SymbolicJudge().judge_all([(s, FLD[1]) for s in steps]))
    assert f"Query: hypothesis = {FLD[1].formulas['hypothesis']}" in trace
    assert "by modus ponens" in trace or "by and intro" in trace
    assert solver_trace(FLD[4]).endswith("the facts entail neither.\n__UNKNOWN__")


def test_logipt_refuses_problems_without_formulas_unless_told_to_skip():
    with pytest.raises(LogiPTDataError, match="'cat'"):
        logipt_data([CAT])
    assert [e["id"] for e in logipt_data([CAT, FLD[0]], skip_unusable=True)] == [FLD[0].id]
