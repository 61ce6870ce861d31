"""The claims family: every verdict is computed from the runs' numbers, so changing one number in a small
fixture run changes the verdict it drives; every rule can yield both outcomes; the run reads its upstream runs
as written and refuses to guess when they are missing."""
from __future__ import annotations

import copy
import inspect
from dataclasses import replace
from typing import Any

import pandas as pd
import pytest
from test_paper_citations import SOURCE
from test_roundtrip import same_run

from finelogic.eval.accuracy import RECORD_COLUMNS, depth_bucket, records_frame
from finelogic.eval.probing import LINEAR, MAJORITY, TEXT_ONLY, summarize as summarize_probes
from finelogic.eval.soundness import STEP_COLUMNS
from finelogic.eval import claims
from finelogic.runs import accuracy, claims as claims_family, probing, soundness, supervision
from finelogic.runs.provenance import Provenance
from finelogic.runs.upstream import UpstreamMissing

BASE = "SmolLM2-135M-Instruct"
NL, STRUCT, FILTER, DIRECT = claims.SFT_SETTINGS
SETTINGS = ("CoT", NL, STRUCT, FILTER, DIRECT)
TRAINING_DEPTHS = [0, 1]

#: The fixture run, as numbers: every claim is reproduced by these.
FIXTURE = {
    # FLD PROVED/DISPROVED items: [[n, correct] at the training depths 0-1, [n, correct] at depth 3], and
    # [n, correct] UNKNOWN items.
    "fld": {"CoT": [[20, 4], [20, 4], [4, 0]], **{s: [[20, 18], [20, 6], [4, 0]] for s in SETTINGS[1:]}},
    # [n, correct] on FOLIO and on Multi-LogiEval (unseen), and on ProntoQA (seen).
    "other": {"CoT": [[50, 20], [50, 20], [20, 10]], NL: [[50, 40], [50, 40], [20, 19]],
              **{s: [[50, 25], [50, 25], [20, 19]] for s in (STRUCT, FILTER, DIRECT)}},
    # Judged FLD responses, one step each: [samples, all valid, all relevant, all atomic].
    "soundness": {"CoT": [50, 2, 30, 1], NL: [50, 30, 5, 5], STRUCT: [50, 30, 30, 25], FILTER: [50, 20, 30, 10],
                  DIRECT: [50, 20, 5, 20]},
    # The linear probe per task and model: [metric, ci_low, ci_high] (CSS in steps, RFI / NSD in %).
    "probing": {
        "css": {BASE: [4.0, 3.7, 4.3], NL: [3.8, 3.4, 4.1], STRUCT: [3.8, 3.4, 4.1], FILTER: [4.6, 4.2, 5.0],
                DIRECT: [3.8, 3.4, 4.1]},
        "rfi": {BASE: [10.0, 5.0, 15.0], NL: [20.0, 12.0, 30.0], STRUCT: [30.0, 20.0, 40.0],
                FILTER: [30.0, 20.0, 40.0], DIRECT: [60.0, 50.0, 70.0]},
        "nsd": {BASE: [30.0, 25.0, 35.0], NL: [70.0, 62.0, 78.0], STRUCT: [50.0, 40.0, 60.0],
                FILTER: [50.0, 40.0, 60.0], DIRECT: [50.0, 40.0, 60.0]},
    },
    "training_depths": TRAINING_DEPTHS,
}


# ------------------------------------------------------------------------------------------- fixture tables


def _record(i: int, setting: str, dataset: str, depth: int | None, gold: str, correct: bool) -> dict:
    wrong = "DISPROVED" if gold != "DISPROVED" else "PROVED"
    return {"id": f"{dataset}-{i}", "dataset": dataset, "depth": depth,
            "depth_bucket": depth_bucket(depth, gold, dataset), "gold": gold,
            "prediction": gold if correct else wrong, "correct": correct, "no_answer": False, "no_output": False,
            "truncated": False, "finish_reason": "stop", "response": f"... __{gold if correct else wrong}__",
            "setting": setting, "model": BASE, "policy": "principled", "layout": "principled",
            "compat_scorer": "vllm_overall"}


def records_of(fixture: dict) -> pd.DataFrame:
    """Accuracy records in :data:`RECORD_COLUMNS` (what the supervision run's ``records`` hold)."""
    rows = []
    for setting in SETTINGS:
        (n_in, c_in), (n_out, c_out), (n_unknown, c_unknown) = fixture["fld"][setting]
        rows += [_record(i, setting, "fld", i % 2, ("PROVED", "DISPROVED")[i % 2], i < c_in) for i in range(n_in)]
        rows += [_record(100 + i, setting, "fld", 3, ("PROVED", "DISPROVED")[i % 2], i < c_out) for i in range(n_out)]
        rows += [_record(200 + i, setting, "fld", 2, "UNKNOWN", i < c_unknown) for i in range(n_unknown)]
        for dataset, (n, c) in zip(("folio", "multi_logieval", "prontoqa"), fixture["other"][setting]):
            gold = "True" if dataset != "prontoqa" else "PROVED"
            rows += [_record(i, setting, dataset, None, gold, i < c) for i in range(n)]
    return records_frame(rows)


def steps_of(fixture: dict) -> pd.DataFrame:
    """Judged steps in :func:`finelogic.eval.soundness.judge_responses`'s columns, one step per response."""
    rows, sample = [], 0
    for setting, (samples, valid, relevant, atomic) in fixture["soundness"].items():
        for i in range(samples):
            rows.append({"id": f"fld-{i}", "model": BASE, "setting": setting, "depth_bucket": "0-3", "sample": sample,
                         "step": 1, "n_steps": 1, "raw": "fact1 -> hypothesis: ...", "premises": "fact1",
                         "conclusion_id": "hypothesis", "parsed": True, "valid": i < valid,
                         "atomic": i < valid and i < atomic, "reason": "", "decided_by": "symbolic",
                         "relevant": i < relevant, "relevant_compat": i < relevant})
            sample += 1
    return pd.DataFrame(rows, columns=["id", "model", "setting", "depth_bucket", *STEP_COLUMNS])


SUMMARY_COLUMNS = ["model", "readout", "probe", "task", "metric", "ci_low", "ci_high", "unit", "row_accuracy",
                   "row_ci_low", "row_ci_high", "problems", "rows"]


def summary_of(fixture: dict, readout: str = "chat") -> pd.DataFrame:
    """A probing ``summary`` (:func:`finelogic.eval.probing.summarize`'s columns): the linear probe of the base
    model and each fine-tuned one, plus baselines and the random-init control the claims must not read."""
    rows = []
    for task, by_model in fixture["probing"].items():
        unit = "steps" if task == "css" else "% of problems"
        for model, (metric, low, high) in by_model.items():
            rows.append([model, readout, LINEAR, task, metric, low, high, unit, 70.0, 65.0, 75.0, 30, 180])
        rows.append([BASE, readout, TEXT_ONLY, task, 99.0, 98.0, 100.0, unit, 99.0, 98.0, 100.0, 30, 180])
        rows.append([BASE, readout, MAJORITY, task, 0.0, 0.0, 0.0, unit, 50.0, 50.0, 50.0, 30, 180])
        rows.append([probing.RANDOM_INIT, readout, LINEAR, task, 99.0, 98.0, 100.0, unit, 50.0, 45.0, 55.0, 30, 180])
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def verdict(function, fixture: dict = FIXTURE) -> claims.Verdict:
    """``function``'s verdict on the fixture's tables (each claim takes the tables its parameters name)."""
    tables = {"records": records_of(fixture), "steps": steps_of(fixture), "summary": summary_of(fixture),
              "training_depths": fixture["training_depths"]}
    names = inspect.signature(function).parameters
    return function(**{k: v for k, v in tables.items() if k in names})


def changed(path: tuple, value) -> dict:
    fixture = copy.deepcopy(FIXTURE)
    place = fixture
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    return fixture


# ------------------------------------------------------------------------------------------- the schemas


def test_the_fixture_tables_have_the_real_schemas():
    assert list(records_of(FIXTURE).columns) == list(RECORD_COLUMNS)
    # judge_responses: its key columns, then STEP_COLUMNS
    assert list(steps_of(FIXTURE).columns) == ["id", "model", "setting", "depth_bucket", *STEP_COLUMNS]
    predictions = pd.DataFrame({"model": BASE, "readout": "chat", "probe": LINEAR, "task": "rfi",
                                "problem_id": ["a", "a", "b", "b"], "step": 0, "n_steps": 0, "label": [1, 0, 1, 0],
                                "prediction": [1, 0, 0, 0], "correct": [True, True, False, True]})
    assert list(summarize_probes(predictions, resamples=20).columns) == SUMMARY_COLUMNS
    assert "records" in accuracy.AccuracyRun.__dataclass_fields__
    assert "steps" in soundness.SoundnessRun.__dataclass_fields__
    assert "summary" in probing.ProbingRun.__dataclass_fields__


# ------------------------------------------------------------------------------------------- one number, one verdict

#: Per claim: the one number changed, its new value, and the verdict it then drives.
FLIPS = [
    (claims.fine_tuning_raises_accuracy, ("fld", "CoT", 1, 1), 20, claims.INCONCLUSIVE),  # base 8 -> 24 of 44
    (claims.sft_nl_raises_fld, ("fld", NL, 0, 1), 6, claims.INCONCLUSIVE),  # NL 24 -> 12 of 44, base 8 of 44
    (claims.nl_transfers_best, ("other", STRUCT, 0, 1), 50, claims.INCONCLUSIVE),  # Struct on FOLIO 25 -> 50 of 50
    (claims.symbolic_more_atomic, ("soundness", NL, 3), 30, claims.INCONCLUSIVE),  # NL all atomic 5 -> 30 of 50
    (claims.nl_and_struct_more_valid, ("soundness", "CoT", 1), 30, claims.INCONCLUSIVE),  # base all valid 2 -> 30
    (claims.accuracy_falls_beyond_training_depths, ("fld", NL, 1, 1), 18, claims.INCONCLUSIVE),  # NL deep 6 -> 18
    (claims.accuracy_falls_beyond_training_depths, ("training_depths", 1), 3, claims.NOT_TESTABLE),  # none beyond
    (claims.nl_direct_least_relevant, ("soundness", NL, 2), 45, claims.NOT_REPRODUCED),  # NL all relevant 5 -> 45
    (claims.css_little_gain, ("probing", "css", NL, 2), 4.5, claims.INCONCLUSIVE),  # NL CSS upper end 4.1 -> 4.5
    (claims.rfi_gains, ("probing", "rfi", STRUCT, 1), 14.0, claims.INCONCLUSIVE),  # Struct RFI lower end 20 -> 14
    (claims.rfi_symb_direct_best, ("probing", "rfi", DIRECT, 1), 35.0, claims.INCONCLUSIVE),  # 50 -> 35
    (claims.nsd_gains, ("probing", "nsd", STRUCT, 1), 30.0, claims.INCONCLUSIVE),  # Struct NSD lower end 40 -> 30
    (claims.nsd_nl_best, ("probing", "nsd", NL, 1), 55.0, claims.INCONCLUSIVE),  # NL NSD lower end 62 -> 55
]


def test_every_claim_is_reproduced_by_the_fixture_and_has_a_flip():
    assert {f for f, *_ in FLIPS} == set(claims.CLAIMS)
    for function in claims.CLAIMS:
        result = verdict(function)
        assert result.verdict == claims.REPRODUCED, (function.__name__, result.evidence)


@pytest.mark.parametrize("function, path, value, expected", FLIPS,
                         ids=[f"{f.__name__}-{'.'.join(map(str, p))}" for f, p, _, _ in FLIPS])
def test_changing_one_number_changes_the_verdict_it_drives(function, path, value, expected):
    before = verdict(function)
    after = verdict(function, changed(path, value))
    assert before.verdict == claims.REPRODUCED
    assert after.verdict == expected, after.evidence
    assert after.claim == before.claim and after.evidence != before.evidence


def test_a_separation_the_other_way_is_not_reproduced():
    # The base model far above every style on FLD: Table 2's direction reversed.
    fixture = copy.deepcopy(FIXTURE)
    fixture["fld"]["CoT"] = [[20, 20], [20, 20], [4, 4]]
    result = verdict(claims.fine_tuning_raises_accuracy, fixture)
    assert result.verdict == claims.NOT_REPRODUCED
    assert "below the base" in result.evidence


def test_a_base_model_that_only_lacks_the_answer_format_is_compared_by_its_forced_choice():
    # The base model's CoT answers lack the marker (8 of 44 right), but its forced choice gets 40 of 44: the
    # styles' 24 of 44 are above the first and below the second, so fine-tuning did not raise accuracy.
    records = records_of(FIXTURE)
    base = records["setting"] == "CoT"
    records["forced_correct"] = pd.array([pd.NA] * len(records), dtype="boolean")
    fld_base = records.index[base & (records["dataset"] == "fld")]
    records.loc[fld_base, "forced_correct"] = [i >= 4 for i in range(len(fld_base))]
    result = claims.fine_tuning_raises_accuracy(records)
    assert result.verdict == claims.NOT_REPRODUCED
    assert "the base, forced choice (FLD) 90.9%" in result.evidence and "below the base's forced choice" in result.evidence
    # A forced choice no better than its CoT answers (8 of 44): the styles are above both.
    records.loc[fld_base, "forced_correct"] = [i % 6 == 0 for i in range(len(fld_base))]
    assert claims.fine_tuning_raises_accuracy(records).verdict == claims.REPRODUCED
    # ... unless its contextually calibrated forced choice is the better reading (40 of 44): then not.
    records["calibrated_correct"] = pd.array([pd.NA] * len(records), dtype="boolean")
    records.loc[fld_base, "calibrated_correct"] = [i >= 4 for i in range(len(fld_base))]
    result = claims.fine_tuning_raises_accuracy(records)
    assert result.verdict == claims.NOT_REPRODUCED
    assert "below the base's calibrated forced choice" in result.evidence


def test_the_evidence_carries_n_and_intervals_and_every_row_its_source():
    table = claims.verdicts(records_of(FIXTURE), steps_of(FIXTURE), summary_of(FIXTURE), TRAINING_DEPTHS,
                            base=BASE, readout="chat")
    assert list(table.columns) == list(claims.VERDICT_COLUMNS) and len(table) == len(claims.CLAIMS)
    assert set(table["verdict"]) == {claims.REPRODUCED}
    first = table.iloc[0]["evidence"]
    assert "SFT-NL (FLD) 54.5% [40.1, 68.3] (n = 44)" in first and "the base (CoT) (FLD) 18.2% [9.5, 32.0] (n = 44)" in first
    for row in table.itertuples():
        assert SOURCE.search(row.source) and SOURCE.search(row.what_paper_says), row.claim
        assert "n = " in row.evidence and "[" in row.evidence
    for function in claims.CLAIMS:
        assert "Rule:" in function.__doc__ and ("Table" in function.__doc__), function.__name__


def _fld_problems(records: pd.DataFrame, stated: int) -> list:
    """A problem per FLD record id: the first ``stated`` PROVED/DISPROVED items have a fact whose consequent is
    the hypothesis (PROVED) or its negation (DISPROVED), so the consequent rule reads their label; the others
    state nothing and the rule falls back to the negation rule (no negation word: PROVED)."""
    from finelogic.data.problem import Fact, Problem

    out, decided = [], 0
    for item_id, gold in records[records["dataset"] == "fld"].drop_duplicates("id")[["id", "gold"]].itertuples(index=False):
        readable = gold != "UNKNOWN" and decided < stated
        decided += gold != "UNKNOWN"
        fact = ("{A}{a} -> {B}{a}" if gold == "PROVED" else "{A}{a} -> ¬{B}{a}") if readable else "{A}{a} -> {C}{a}"
        out.append(Problem(id=item_id, dataset="fld", facts=(Fact("fact1", "if the a is a then ..."),),
                           hypothesis="the a is b.", label=gold, formulas={"fact1": fact, "hypothesis": "{B}{a}"}))
    return out


def test_a_gain_that_a_cue_rule_matches_is_not_reproduced():
    # SFT-NL answers 42 of its 44 FLD items (95.5% [84.9, 98.7]), far above the base model's 8 of 44.
    fixture = changed(("fld", NL), [[20, 20], [20, 18], [4, 4]])
    records = records_of(fixture)
    silent = claims.sft_nl_raises_fld(records, _fld_problems(records, stated=0))
    assert silent.verdict == claims.REPRODUCED, silent.evidence
    assert "SFT-NL (FLD) above every cue rule (best constant 45.5%, negation rule 45.5%, consequent rule 45.5%)" \
        in silent.evidence
    # When the facts of the 40 PROVED/DISPROVED items state the answer, the consequent rule scores 40 of 44
    # (90.9%): the same accuracy no longer tells reasoning from reading the cue.
    cued = claims.sft_nl_raises_fld(records, _fld_problems(records, stated=40))
    assert cued.verdict == claims.INCONCLUSIVE
    assert "SFT-NL (FLD) not above the consequent rule" in cued.evidence and "consequent rule 90.9%" in cued.evidence
    # The every-style claim reads the same rule.
    assert claims.fine_tuning_raises_accuracy(records, _fld_problems(records, stated=40)).verdict == claims.INCONCLUSIVE


def test_all_valid_against_a_base_model_the_judge_cannot_score_is_not_testable():
    assert verdict(claims.nl_and_struct_more_valid).verdict == claims.REPRODUCED  # base: 2 of 50 all valid
    steps = steps_of(FIXTURE)
    steps["valid"] = steps["valid"].astype(object)
    steps.loc[steps["setting"] == "CoT", "valid"] = None  # the judge decides none of the base model's steps
    result = claims.nl_and_struct_more_valid(steps)
    assert result.verdict == claims.NOT_TESTABLE
    assert "the base (CoT): no value (n = 0 scored of 50 responses)" in result.evidence
    assert "judge decides none of the base model's steps" in result.evidence


def test_css_barely_moves_is_an_equivalence_that_can_fail_both_ways():
    # The fixture: base 4.0 [3.7, 4.3], margin ±0.8 steps; NL, Struct, Direct 3.8 [3.4, 4.1]: difference -0.20
    # [-0.66, +0.26], inside the margin; Filter 4.6 [4.2, 5.0]: +0.60 [+0.10, +1.10], unclear. 3 of 4 barely move.
    result = verdict(claims.css_little_gain)
    assert result.verdict == claims.REPRODUCED
    assert "SFT-NL 3.80 steps [3.40, 4.10] (n = 30 test problems): difference -0.20 steps [-0.66, +0.26], barely " \
           "moves" in result.evidence and "margin ±0.80 steps" in result.evidence
    # Three styles far above the base (6.0 [5.7, 6.3]: +2.00 [+1.58, +2.42], wholly outside): not reproduced.
    fixture = copy.deepcopy(FIXTURE)
    for style in (NL, STRUCT, DIRECT):
        fixture["probing"]["css"][style] = [6.0, 5.7, 6.3]
    moved = verdict(claims.css_little_gain, fixture)
    assert moved.verdict == claims.NOT_REPRODUCED and "+2.00 steps [+1.58, +2.42], moves" in moved.evidence


# ------------------------------------------------------------------------------------------- missing data


def test_a_style_the_runs_should_hold_but_lack_makes_the_claims_about_it_not_testable():
    """A study whose SFT-Symb-Direct unit is not made yet: the fixture's verdicts all read 'reproduced' on
    the styles present, but a claim about every style (or the best one) cannot be read from three of four."""
    keep = lambda table, column="setting": table[table[column] != DIRECT]  # noqa: E731
    summary = summary_of(FIXTURE)
    kwargs = dict(base=BASE, readout="chat")
    present = claims.verdicts(keep(records_of(FIXTURE)), keep(steps_of(FIXTURE)), keep(summary, "model"),
                              TRAINING_DEPTHS, **kwargs)
    expected = claims.verdicts(keep(records_of(FIXTURE)), keep(steps_of(FIXTURE)), keep(summary, "model"),
                               TRAINING_DEPTHS, expected=claims.SFT_SETTINGS, **kwargs).set_index("claim")
    first = claims.FINE_TUNING_RAISES_ACCURACY.claim
    assert present.set_index("claim").loc[first, "verdict"] == claims.REPRODUCED
    assert expected.loc[first, "verdict"] == claims.NOT_TESTABLE
    assert "missing: SFT-Symb-Direct (expected in this run, not in it yet" in expected.loc[first, "evidence"]
    # The claims that name only styles present keep their verdicts.
    atomic = claims.verdicts(records_of(FIXTURE), keep(steps_of(FIXTURE)), summary, TRAINING_DEPTHS,
                             expected=claims.SFT_SETTINGS, **kwargs).set_index("claim")
    assert atomic.loc[claims.SYMBOLIC_MORE_ATOMIC.claim, "verdict"] == claims.REPRODUCED
    # With every expected style present nothing changes.
    whole = claims.verdicts(records_of(FIXTURE), steps_of(FIXTURE), summary, TRAINING_DEPTHS,
                            expected=claims.SFT_SETTINGS, **kwargs)
    assert set(whole["verdict"]) == {claims.REPRODUCED}


def test_missing_unseen_datasets_make_transfer_not_testable_and_say_so():
    records = records_of(FIXTURE)
    result = claims.nl_transfers_best(records[~records["dataset"].isin(["folio", "multi_logieval"])])
    assert result.verdict == claims.NOT_TESTABLE
    assert "FOLIO and Multi-LogiEval are not in the run" in result.evidence
    only_folio = claims.nl_transfers_best(records[records["dataset"] != "multi_logieval"])
    assert only_folio.verdict == claims.REPRODUCED and "Multi-LogiEval not in the run" in only_folio.evidence


def test_a_probing_run_without_fine_tuned_models_is_not_testable():
    summary = summary_of(FIXTURE)
    base_only = summary[summary["model"].isin([BASE, probing.RANDOM_INIT])]
    for function in (claims.css_little_gain, claims.rfi_gains, claims.rfi_symb_direct_best, claims.nsd_gains,
                     claims.nsd_nl_best):
        result = function(base_only)
        assert result.verdict == claims.NOT_TESTABLE and "fine-tuned" in result.evidence, function.__name__
    # fine-tuned rows named by their checkpoint folder are found too
    renamed = summary.assign(model=summary["model"].map(lambda m: f"{BASE}-{m}" if m.startswith("SFT-") else m))
    assert claims.rfi_symb_direct_best(renamed).verdict == claims.REPRODUCED
    # another read-out than the one probed
    assert "no linear" in claims.nsd_gains(summary, readout="plain").evidence


def test_responses_that_could_not_be_scored_are_missing_not_zero():
    steps = steps_of(FIXTURE)
    steps["valid"] = steps["valid"].astype(object)
    steps.loc[steps["setting"] == STRUCT, "valid"] = None  # the judge decided none of Struct's steps
    result = claims.symbolic_more_atomic(steps)
    assert result.verdict == claims.NOT_TESTABLE and "no value" in result.evidence


def _cut(records: pd.DataFrame, where: pd.Series) -> pd.DataFrame:
    """``records`` with the rows at ``where`` cut at the token cap before an answer, as the scorer writes them."""
    records = records.copy()
    records.loc[where, ["prediction", "truncated", "correct", "finish_reason"]] = [None, True, False, "length"]
    return records


def test_a_style_cut_at_the_token_cap_is_shown_but_not_compared():
    # Struct's FLD answers all wrong: it lies below the base model, so fine-tuning would not raise accuracy ...
    fixture = changed(("fld", STRUCT), [[20, 0], [20, 0], [4, 0]])
    records = records_of(fixture)
    assert claims.fine_tuning_raises_accuracy(records).verdict == claims.NOT_REPRODUCED
    # ... unless those answers were never given: 40 of its 44 responses ran out of tokens before a marker.
    struct_fld = records.index[(records["setting"] == STRUCT) & (records["dataset"] == "fld")]
    records = _cut(records, records.index.isin(struct_fld[:40]))
    result = claims.fine_tuning_raises_accuracy(records)
    assert result.verdict == claims.REPRODUCED, result.evidence
    assert "SFT-Symb-Struct (FLD) 0.0%" in result.evidence  # still shown
    assert "SFT-Symb-Struct not compared: 40 of its 44 responses were cut at the token cap" in result.evidence
    assert "SFT-Symb-Struct above" not in result.evidence
    # Half cut is not "mostly": 22 of 44 cut, and Struct is compared (and below) again.
    records = _cut(records_of(fixture), records_of(fixture).index.isin(struct_fld[:22]))
    assert claims.fine_tuning_raises_accuracy(records).verdict == claims.NOT_REPRODUCED
    # The depth claim leaves a cut style out too; the base model cut on the CoT prompt leaves its forced
    # choice (none in this fixture) to compare with, so fine-tuning's gain cannot be shown.
    records = records_of(FIXTURE)
    depth = claims.accuracy_falls_beyond_training_depths(
        _cut(records, (records["setting"] == NL) & (records["dataset"] == "fld")), TRAINING_DEPTHS)
    assert depth.verdict == claims.REPRODUCED and "SFT-NL not compared" in depth.evidence
    base_cut = claims.fine_tuning_raises_accuracy(
        _cut(records, (records["setting"] == "CoT") & (records["dataset"] == "fld")))
    assert base_cut.verdict == claims.NOT_TESTABLE and "the base (CoT) not compared" in base_cut.evidence


def test_transfer_needs_sft_nl_answers_not_cut_at_the_cap():
    records = records_of(FIXTURE)
    unseen = records["dataset"].isin(["folio", "multi_logieval"])
    result = claims.nl_transfers_best(_cut(records, unseen & (records["setting"] == NL)))
    assert result.verdict == claims.NOT_TESTABLE and "SFT-NL not compared" in result.evidence
    # every other style cut: nothing left to compare SFT-NL with
    result = claims.nl_transfers_best(_cut(records, unseen & records["setting"].isin([STRUCT, FILTER, DIRECT])))
    assert result.verdict == claims.NOT_TESTABLE and result.evidence.count("not compared") == 3


# ------------------------------------------------------------------------------------------- the run


def _upstream_runs(seed: int = 0) -> dict[str, Any]:
    """The claims run's upstream runs, by keyword: the fine-tuned models' rows are the accuracy and soundness
    runs' (beside the base model's), the supervision run names the styles and training depths."""
    settings = replace(supervision.PROFILES["smoke"], fld_depths=tuple(TRAINING_DEPTHS))
    made_sft = supervision.SupervisionRun(
        Provenance(supervision.FAMILY, "smoke", seed, settings=settings, models=(BASE, NL, STRUCT, FILTER, DIRECT)),
        training=pd.DataFrame({"setting": [NL, STRUCT, FILTER, DIRECT], "checkpoint": ["a", "b", "c", "d"]}))
    made_accuracy = accuracy.AccuracyRun(
        Provenance(accuracy.FAMILY, "smoke", seed, models=(BASE, NL, STRUCT, FILTER, DIRECT)),
        records=records_of(FIXTURE))
    made_soundness = soundness.SoundnessRun(Provenance(soundness.FAMILY, "smoke", seed), steps=steps_of(FIXTURE))
    predictions = pd.DataFrame(columns=["model", "readout", "probe", "task", "problem_id", "step", "n_steps", "label",
                                        "prediction", "correct"])
    made_probing = probing.ProbingRun(
        Provenance(probing.FAMILY, "smoke", seed, settings=replace(probing.PROFILES["smoke"], readouts=("chat",)),
                   models=(BASE, probing.RANDOM_INIT, NL, STRUCT, FILTER, DIRECT)),
        predictions, summary_of(FIXTURE))
    return {"supervision_run": made_sft, "accuracy_run": made_accuracy, "soundness_run": made_soundness,
            "probing_run": made_probing}


def test_the_run_reads_its_written_upstream_runs_and_refuses_when_they_are_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    runs = _upstream_runs()
    for name in ("supervision", "accuracy", "soundness", "probing"):  # the order of claims.UPSTREAM
        with pytest.raises(UpstreamMissing, match=f"no {name} run"):
            claims_family.run("smoke", seed=0)
        runs[f"{name}_run"].write()
    read = claims_family.run("smoke", seed=0)
    handed = claims_family.run("smoke", seed=0, **runs)
    pd.testing.assert_frame_equal(read.verdicts, handed.verdicts)
    assert read.counts() == {claims.REPRODUCED: len(claims.CLAIMS), claims.NOT_REPRODUCED: 0, claims.INCONCLUSIVE: 0,
                             claims.NOT_TESTABLE: 0}
    assert read.provenance.family == "claims" and read.provenance.n == len(claims.CLAIMS)
    assert list(read.provenance.data) == ["supervision", "accuracy", "soundness", "probing"]
    with pytest.raises(UpstreamMissing, match="another seed"):
        claims_family.run("smoke", seed=1)
    # its own run reads back whole
    read.write(tmp_path / "claims")
    assert same_run(claims_family.ClaimsRun.read(tmp_path / "claims"), read)


def test_the_run_takes_its_settings_and_runs_no_model():
    runs = _upstream_runs()
    plain = claims_family.run("smoke", **runs, readout="plain")
    probing_claims = plain.verdicts[plain.verdicts["source"].str.startswith("Table 4")]
    assert len(probing_claims) == 5 and set(probing_claims["verdict"]) == {claims.NOT_TESTABLE}  # read out in chat
    with pytest.raises(ValueError, match="runs no model"):
        claims_family.run("smoke", **runs, backends={"embedded": object()})


def test_the_page_helpers_show_every_verdict():
    from finelogic.book import claims as page

    made = claims_family.run("smoke", **_upstream_runs())
    table = page.scan_table(made).frame
    assert len(table) == len(claims.CLAIMS) and set(table["Verdict"]) == {claims.REPRODUCED}
    assert all(why.endswith("apart from 0 as the paper says") for why in table["Why"] if why)
    assert list(page.short_table(made).frame.columns) == ["finding", "in the paper", "our verdict"]
    assert page.counts_sentence(made) == "Of the 12 findings tested, 12 are reproduced."
