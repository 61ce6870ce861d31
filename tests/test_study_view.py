"""The book's study sections (finelogic.book.study_view): what a page says with and without committed study
results, the learning curve read from its files, and the 'code changed since' line."""
from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

from conftest import REPO


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def test_a_checkout_without_the_study_says_so(results):
    from finelogic.book import study_view

    assert study_view.read("accuracy") is None
    assert "No laptop-scale study results" in study_view.header("accuracy").data
    assert "make study" in study_view.claims_short().frame.iloc[0, 0]
    assert study_view.learning_curve().empty


def _curve(folder, stages):
    folder.mkdir(parents=True)
    lines = []
    for k, (seen, right) in enumerate(stages):
        row = {"stage": k, "examples_seen": seen, "train_seconds": 10.0, "tokens_per_s": 150.0}
        for name in ("fld_0-2", "fld_3-5", "prontoqa_3"):
            pd.DataFrame({"correct": [True] * right + [False] * (10 - right)}).to_csv(
                folder / f"curve.jsonl.stage{k}.{name}.csv", index=False)
            row[name] = {"n": 10, "accuracy": 10.0 * right, "marker_rate": 100.0}
        lines.append(json.dumps(row))
    (folder / "curve.jsonl").write_text("\n".join(lines) + "\n")


def test_the_learning_curve_is_read_with_wilson_intervals(results):
    from finelogic.book import study_view
    from finelogic.eval.stats import wilson_interval

    _curve(results / "study" / study_view.CURVE, [(256, 3), (512, 8)])
    curve = study_view.learning_curve()
    assert len(curve) == 6 and curve["examples_seen"].tolist() == [256] * 3 + [512] * 3
    row = curve.iloc[3]
    low, high = wilson_interval(8, 10)
    assert (row["accuracy"], row["ci_low"], row["ci_high"]) == (80.0, round(100 * low, 1), round(100 * high, 1))
    assert study_view.curve_figure(curve) is not None


def test_the_committed_learning_curve_reads(monkeypatch):
    from finelogic.book import study_view

    if not (REPO / "results" / "study" / study_view.CURVE / "curve.jsonl").is_file():
        pytest.skip("no learning curve committed")
    monkeypatch.setenv("FINELOGIC_RESULTS", str(REPO / "results"))
    curve = study_view.learning_curve()
    assert curve["examples_seen"].is_monotonic_increasing and len(curve) >= 9  # three stages or more
    assert curve["n"].min() >= 60 and curve["accuracy"].between(0, 100).all()
    assert study_view.curve_provenance()["commit"]


def _claims_run(results):
    from finelogic.runs.provenance import Provenance
    from finelogic.runs.claims import ClaimsRun

    verdicts = pd.DataFrame({"claim": ["fine-tuning helps"], "source": ["Table 2"], "verdict": ["inconclusive"]})
    ClaimsRun(Provenance("claims", "study", 0), verdicts=verdicts).write(results / "study" / "claims")


def test_a_page_names_the_units_those_missing_and_whether_the_code_changed(results):
    from finelogic.book import study_view

    _claims_run(results)
    roots = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=REPO, capture_output=True,
                           text=True).stdout.split()
    units = [{"unit": "base", "commit": "unknown", "finished": "2026-12-02T12:00:00Z", "seconds": 1800.0,
              "load_mean": 2.1, "in_study": True}]
    if roots:  # the first commit has no claims module: its code changed since
        units.append({"unit": "SFT-NL", "commit": roots[0][:10], "finished": "2026-12-02T13:00:00Z",
                      "seconds": 3000.0, "load_mean": 2.4, "in_study": True})
    pd.DataFrame(units).to_csv(results / "study" / "units.csv", index=False)
    text = study_view.header("claims").data
    assert "base (commit `unknown`, 2026-12-02, 30 min, load 2.1)" in text
    assert "base: cannot tell" in text
    assert "Not yet run: " in text and "SFT-Symb-Direct" in text
    if roots:
        assert "SFT-NL: **yes**" in text and "SFT-NL," not in text.split("Not yet run:")[1]
    assert study_view.claims_short().frame.shape[0] == 1


def test_a_page_names_a_unit_left_out_for_its_settings_and_how_to_remake_it(results):
    from finelogic.book import study_view

    _claims_run(results)
    units = [{"unit": "base", "commit": "abc1234", "finished": "2026-12-02T12:00:00Z", "seconds": 1800.0,
              "load_mean": 2.1, "in_study": True, "left_out": ""},
             {"unit": "SFT-Symb-Filter", "commit": "def5678", "finished": "2026-12-01T12:00:00Z", "seconds": 600.0,
              "load_mean": 2.0, "in_study": False, "left_out": "made with another config"}]
    pd.DataFrame(units).to_csv(results / "study" / "units.csv", index=False)
    text = study_view.header("claims").data
    units_part, left_part = text.split("left out")
    assert "base (commit `abc1234`" in units_part and "SFT-Symb-Filter" not in units_part
    assert "SFT-Symb-Filter (commit `def5678`; `finelogic study --units SFT-Symb-Filter --again`)" in left_part
    assert "SFT-Symb-Filter" not in text.split("Not yet run:")[1]  # left out, not unrun


def test_the_committed_study_renders_with_every_page_view(monkeypatch):
    """What `make book` shows by default: every results page's study section, on the committed study."""
    from finelogic.book import claims as claims_page
    from finelogic.book import findings, study_view
    from finelogic.book import probing as probing_page
    from finelogic.book import soundness as soundness_page
    from finelogic.book import supervision as supervision_page
    from finelogic.book.accuracy import cue_view, table2_view, table5_view
    from finelogic.runs import probing

    if not (REPO / "results" / "study" / "units.csv").is_file():
        pytest.skip("no study committed")
    monkeypatch.setenv("FINELOGIC_RESULTS", str(REPO / "results"))
    made = {f: study_view.read(f) for f in ("supervision", "accuracy", "depth", "soundness", "probing", "claims")}
    assert all(run is not None for run in made.values())
    units = study_view.units()
    assert len(units) >= 1
    for family in made:
        text = study_view.header(family).data
        assert all(f"{unit} (commit `{commit}`" in text for unit, commit in zip(units["unit"], units["commit"]))
    accuracy_run = made["accuracy"]
    assert len(table2_view(accuracy_run.summary, accuracy_run.forced_summary).frame) == len(accuracy_run.summary)
    cues = cue_view(accuracy_run).frame
    assert len(cues) == len(accuracy_run.records.groupby(["model", "setting", "dataset"]))
    assert findings.accuracy(accuracy_run).strip()
    assert len(table5_view(made["depth"].summary, made["depth"].compat, made["depth"].forced).frame)
    assert len(soundness_page.table3_view(made["soundness"]).frame)
    assert len(soundness_page.exclusions_view(made["soundness"]).frame)
    readout = made["probing"].provenance.settings["readouts"][0]
    assert len(probing_page.table4_beside_paper(made["probing"].predictions, readout, "ours (study)"))
    assert findings.probing(made["probing"], probing.RANDOM_INIT)
    assert supervision_page.accuracy_figure(accuracy_run) is not None
    assert study_view.shortcut_sentence(accuracy_run)
    assert "cut at the" in study_view.cap_sentence(accuracy_run)
    assert len(study_view.claims_short().frame) == len(made["claims"].verdicts)
    # The scan table: per finding its deciding difference, the one with the least room, cue rules included.
    scan = claims_page.scan_table(made["claims"]).frame.set_index("Finding")
    nl = scan.loc["SFT-NL raises FLD accuracy over the base model (§5.2.1; Table 2)"]
    assert nl["Deciding difference [95% CI]"] == "−5.4 [−11.7, +0.9] pp"
    assert nl["Why"].startswith("SFT-NL (FLD) − the consequent rule")
    assert "55.8%" in study_view.cue_fact(accuracy_run) and "50.4%" in study_view.cue_fact(accuracy_run)
    # Each page's first sentence, from the committed numbers with their n.
    assert "best style, SFT-NL, answers 50.4% [44.1, 56.7]" in study_view.accuracy_lead(accuracy_run)
    assert "(n = 80 each)" in study_view.depth_lead(made["depth"])
    assert "FLD SFT-NL 50.4% [44.1, 56.7] (n = 240" in study_view.supervision_lead(accuracy_run)
    assert "CSS 68.2% against 60.3%" in study_view.probing_lead(made["probing"])


def test_the_cap_sentence_counts_cut_responses_and_names_the_rows_that_measure_the_cap(results):
    from types import SimpleNamespace

    from finelogic.book import study_view
    from finelogic.eval.accuracy import records_frame, summarize

    def record(i, setting, cut):
        return {"id": f"fld-{i}", "dataset": "fld", "depth": 1, "depth_bucket": "0-3", "gold": "PROVED",
                "prediction": None if cut else "PROVED", "correct": not cut, "no_answer": False, "no_output": False,
                "truncated": cut, "finish_reason": "length" if cut else "stop", "response": "...",
                "setting": setting, "model": "m", "policy": "principled", "layout": "principled",
                "compat_scorer": "vllm_overall"}

    records = records_frame([record(i, "SFT-NL", i < 1) for i in range(10)]
                            + [record(i, "SFT-Symb-Struct", i < 8) for i in range(10)])
    run = SimpleNamespace(records=records, summary=summarize(records, by=("setting", "dataset")),
                          provenance=SimpleNamespace(settings={"generation": {"max_new_tokens": 192}}))
    text = study_view.cap_sentence(run)
    assert "cut at the 192-token cap" in text
    assert "SFT-NL 1 of 10 (FLD 1/10)" in text and "SFT-Symb-Struct 8 of 10 (FLD 8/10)" in text
    assert "SFT-Symb-Struct ran out of tokens on most items" in text and "SFT-NL ran out" not in text
    assert "gold answers" not in text  # no target lengths committed in this results folder
    folder = results / "study" / study_view.TARGET_LENGTHS
    folder.mkdir(parents=True)
    pd.DataFrame([{"style": "Symb-Struct", "depth": "all", "n": 10, "median": 350, "p90": 500, "max": 700,
                   "over_cap": 9}]).to_csv(folder / "lengths.csv", index=False)
    (folder / "provenance.json").write_text(json.dumps({"cap": 192}))
    assert "longer than 192 tokens on 9 of 10 for Symb-Struct (median 350 tokens" in study_view.cap_sentence(run)
    # fine-tuned models given a larger cap: both caps named
    run.provenance.settings["fine_tuned_generation"] = {"max_new_tokens": 768}
    assert "(192 tokens for the base model, 768 for the fine-tuned ones)" in study_view.cap_sentence(run)
