"""The one-sentence findings ("What this run shows") from small hand-made run tables."""
from types import SimpleNamespace

import pandas as pd

from finelogic.book import findings


def _records(dataset, setting, correct, forced, *, marked=True):
    """Accuracy records: one per entry of ``correct``/``forced`` (forced None: no forced answer)."""
    return pd.DataFrame({
        "id": [f"{dataset}-{i}" for i in range(len(correct))], "dataset": dataset, "setting": setting,
        "model": "m", "correct": correct, "no_answer": not marked, "no_output": False, "truncated": False,
        "forced_correct": pd.array(forced, dtype="boolean"),
    })


def test_datasets_says_which_sets_are_real_and_which_generated():
    sets = pd.DataFrame({"dataset": ["fld", "folio", "prontoqa"], "paper_name": ["FLD", "FOLIO", "ProntoQA"],
                         "samples": [30, 0, 20], "generated": [True, False, False], "present": [True, False, True]})
    text = findings.datasets(SimpleNamespace(sets=sets))
    assert text.startswith("This run loads 50 items: FLD 30 items (generated stand-in), ProntoQA 20 items (real data)")
    assert "FOLIO are not present" in text and "Real benchmark data: ProntoQA." in text
    assert "supports nothing" in findings.datasets(SimpleNamespace(sets=pd.DataFrame()))


def test_accuracy_forced_choice_above_chance_and_markers_never_written():
    records = pd.concat([_records("fld", "CoT", [False] * 30, [True] * 25 + [False] * 5, marked=False),
                         _records("prontoqa", "CoT", [False] * 4, [True, False, True, False], marked=False)])
    text = findings.accuracy(SimpleNamespace(records=records))
    assert text.startswith("0 of 34 responses ended with an answer marker (the model never wrote one)")
    # 25/30 = 83.3%, Wilson [66.4, 92.7]: above 33.3; 2/4 = 50% [15.0, 85.0]: contains 50.
    assert "above chance on FLD CoT 83.3% [66.4, 92.7] (n = 30), chance 33.3%" in text
    assert "and indistinguishable from chance on ProntoQA CoT" in text and "[15.0, 85.0]" not in text


def test_accuracy_marker_accuracy_with_its_interval_and_no_forced_answers():
    records = _records("fld", "Direct", [True] * 2 + [False] * 8, [None] * 10)
    text = findings.accuracy(SimpleNamespace(records=records))
    assert "10 of 10 responses ended with an answer marker" in text
    assert "marker accuracy is indistinguishable from chance on FLD Direct." in text
    assert text.endswith("No forced-choice answers were scored in this run.")
    assert "supports nothing" in findings.accuracy(SimpleNamespace(records=pd.DataFrame()))


def test_depth_change_only_beyond_the_intervals():
    def forced(rows):
        return pd.DataFrame(rows, columns=["model", "setting", "depth_bucket", "n", "correct", "accuracy", "ci_low",
                                           "ci_high", "chance"]).assign(chance=100 / 3)

    apart = findings.depth(SimpleNamespace(forced=forced([
        ["m", "CoT", "0-3", 40, 36, 90.0, 76.9, 96.0, 0], ["m", "CoT", "4-7", 40, 8, 20.0, 10.5, 34.8, 0],
        ["m", "CoT", "UNKNOWN", 40, 40, 100.0, 91.2, 100.0, 0]])))
    assert "CoT: forced-choice accuracy changes with depth beyond the 95% intervals (0-3 above 4-7)" in apart
    assert "UNKNOWN" not in apart and "(chance 33.3%)" in apart
    overlap = findings.depth(SimpleNamespace(forced=forced([
        ["m", "CoT", "0-3", 2, 1, 50.0, 9.5, 90.5, 0], ["m", "CoT", "4-7", 2, 0, 0.0, 0.0, 65.8, 0]])))
    assert "does not change with depth beyond the 95% intervals" in overlap
    assert "0-3: 50.0% [9.5, 90.5] (n = 2)" in overlap
    assert "supports nothing" in findings.depth(SimpleNamespace(forced=pd.DataFrame()))


def _steps(samples, *, parsed=True, valid=True):
    """Step rows of ``samples`` one-step responses, all valid/relevant/atomic when parsed."""
    rows = []
    for i in range(samples):
        rows.append({"id": f"p{i}", "model": "m", "setting": "CoT", "depth_bucket": "0-3", "sample": f"s{i}",
                     "step": 0 if parsed else -1, "n_steps": 1 if parsed else 0, "raw": "fact1 -> hypothesis",
                     "premises": "fact1", "conclusion_id": "hypothesis", "parsed": parsed,
                     "valid": valid if parsed else None, "atomic": True if parsed else None,
                     "reason": "", "decided_by": "symbolic" if parsed else None,
                     "relevant": True if parsed else None, "relevant_compat": True if parsed else None})
    return pd.DataFrame(rows)


def test_soundness_says_why_nothing_could_be_scored():
    run = SimpleNamespace(steps=_steps(33, parsed=False), gold_steps=_steps(3), policy="principled")
    text = findings.soundness(run)
    assert text.startswith("0 of 33 responses could be scored (33 wrote no step in the FLD notation")
    assert "supports nothing" in text
    assert "no model responses" in findings.soundness(SimpleNamespace(steps=pd.DataFrame(), policy="principled"))


def test_soundness_rates_with_intervals_beside_the_gold_proofs():
    steps = pd.concat([_steps(5), _steps(5, valid=False).assign(sample=lambda f: f["sample"] + "x")])
    text = findings.soundness(SimpleNamespace(steps=steps, gold_steps=_steps(20), policy="principled"))
    # 5 of 10 all-valid: 50.0% [23.7, 76.3]; gold 20/20 = 100% [83.9, 100]: no overlap.
    assert text.startswith("10 of 10 responses could be scored: all valid 50.0% [23.7, 76.3] (n = 10), below the gold")
    assert "all atomic 100.0% [72.2, 100.0] (n = 10), indistinguishable from the gold proofs' 100.0%" in text


def test_supervision_loss_and_accuracy_against_the_base_model():
    training = pd.DataFrame({"style": ["NL", "Symb-Struct"], "examples": [6, 6], "steps": [10, 10],
                             "loss_first": [2.0, 1.5], "loss_last": [0.5, 1.8]})
    records = pd.concat([_records("fld", "CoT", [False] * 20, [None] * 20),
                         _records("fld", "SFT-NL", [True] * 18 + [False] * 2, [None] * 20),
                         _records("fld", "SFT-Symb-Struct", [True] * 1 + [False] * 19, [None] * 20)])
    text = findings.supervision(SimpleNamespace(training=training), SimpleNamespace(records=records))
    assert text.startswith("The training loss fell from the first to the last step for 1 of 2 styles "
                           "(NL 2.00 → 0.50 over 10 steps; Symb-Struct 1.50 → 1.80 over 10 steps")
    assert "(CoT 0.0% [0.0, 16.1] (n = 20))" in text
    assert "SFT-NL 90.0% [69.9, 97.2] (n = 20) (above CoT)" in text
    assert "SFT-Symb-Struct 5.0% [0.9, 23.6] (n = 20) (indistinguishable from CoT)" in text
    assert "supports nothing" in findings.supervision(SimpleNamespace(training=pd.DataFrame()),
                                                      SimpleNamespace(records=records))
    # the page that trains: its models are evaluated on the evaluation families' pages
    assert findings.supervision(SimpleNamespace(training=training)).endswith(
        "; the accuracy, depth, soundness and probing pages evaluate the fine-tuned models.")


def test_probing_run_without_probes_supports_nothing():
    assert "supports nothing" in findings.probing(SimpleNamespace(summary=pd.DataFrame()))


def test_finding_box_is_an_admonition_titled_what_this_run_shows():
    box = findings.finding_box("0 of 33 responses could be scored.").data
    assert box.startswith("::::{admonition} What this run shows\n:class: tip finelogic-finding")
    assert "0 of 33 responses could be scored." in box


def test_accuracy_names_the_model_when_the_run_has_several():
    records = pd.concat([_records("fld", "CoT", [True] * 3, [None] * 3),
                         _records("fld", "CoT", [False] * 3, [None] * 3).assign(model="m2")])
    text = findings.accuracy(SimpleNamespace(records=records))
    assert "m FLD CoT 100.0% [43.9, 100.0] (n = 3)" in text and "indistinguishable from chance on m2 FLD CoT" in text


def test_many_cells_at_chance_are_counted_not_listed():
    # Four datasets x two settings, every marker answer wrong and every forced answer a coin flip (1 of 2).
    records = pd.concat([_records(d, s, [False] * 2, [True, False]) for d in ("fld", "folio", "multi_logieval",
                                                                            "prontoqa") for s in ("Direct", "CoT")])
    text = findings.accuracy(SimpleNamespace(records=records))
    assert "Forced-choice accuracy is indistinguishable from chance on all 8 cells." in text
    assert "FOLIO CoT" not in text
