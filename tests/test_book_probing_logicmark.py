"""Display helpers of the probing (05) and LogicMark (07) pages: what each table shows, on hand-made runs."""
from __future__ import annotations

import pandas as pd

from finelogic.book import findings
from finelogic.book import logicmark as lm_page
from finelogic.book import probing as probing_page
from finelogic.data.problem import Fact, Problem
from finelogic.eval.probing import predict_table
from finelogic.eval.probing_data import ProbeRow


def _row(pid, label, task, split="test", step=0, n=3):
    return ProbeRow(task, pid, split, step, n, label, "", "prefix", "suffix")


def _predictions():
    css = [_row("p", 1, "css", step=i) for i in (1, 2, 3)]
    tables = []
    for model in ("m1", "m2"):
        tables.append(predict_table(css, [0, 1, 1]).assign(model=model, readout="chat", probe="linear probe"))
        tables.append(predict_table(css, [1, 1, 1]).assign(model=model, readout="chat", probe="majority class"))
    return pd.concat(tables, ignore_index=True)


def test_css_curves_show_each_probe_and_the_majority_class_once():
    curves = probing_page.css_curves(_predictions(), "chat")
    assert curves.index.tolist() == [("m1", "linear probe"), ("", "majority class"), ("m2", "linear probe")]
    assert curves.columns.tolist() == [2, 1, 0]  # most steps remaining first
    assert curves.loc[("m1", "linear probe")].tolist() == [0.0, 100.0, 100.0]
    assert probing_page.css_prefixes_per_curve(_predictions(), "chat") == 3


def test_set_sizes_count_problems_rows_and_positive_labels_per_task_and_split():
    rows = [_row("a", 1, "rfi", "train"), _row("a", 0, "rfi", "train"), _row("b", 1, "rfi", "train"),
            _row("c", 1, "css", "test", 1)]
    sizes = probing_page.set_sizes(rows)
    assert sizes.loc[("RFI", "train")].tolist() == [2, 3, 66.7]
    assert sizes.loc[("CSS", "test")].tolist() == [1, 1, 100.0]
    assert sizes.loc[("NSD", "test")].tolist() == [0, 0, 0.0]


def test_caption_params_name_the_depth_range_and_read_out():
    params = probing_page.caption_params({"depths": (4, 5, 6), "readouts": ("chat",), "layer": -1, "nsd_points": 1})
    assert params == {"depths": "4-6", "readout": "chat", "layer": -1, "nsd_points": 1}


def _item():
    facts = tuple(Fact(f"fact{i}", t) for i, t in enumerate(("a = b", "b = c", "c != d"), 1))
    return Problem("lm0", "logicmark", facts, "Then", options=("a != d", "a = d", "b = d", "a = c"),
                   answer_index=0, depth=3)


def test_option_scores_and_the_worked_explanation_read_one_record():
    item = _item()
    record = {"prediction": 1, "correct": False}
    for k in range(4):
        record |= {f"loglik_{k}": -1.0 - k, f"tokens_{k}": 3, f"score_token_mean_{k}": (-1.0 - k) / 3,
                   f"score_char_{k}": (-1.0 - k) / len(item.options[k])}
    table = lm_page.option_scores(item, record)
    assert table.index.tolist() == ["A", "B", "C", "D"] and table.loc["A", "correct"] == "yes"
    assert table.loc["B", "per token (card)"] == -0.667
    text = lm_page.why_it_follows(item, record)
    assert "`a = b`, then `b = c`, then `c != d`" in text
    assert "picked **`a = d`** (wrong: the flipped answer)" in text
    assert lm_page.worked_item([item]) is item


def test_headline_values_quote_the_embedded_row_and_say_n_a_without_a_control():
    by_hop = pd.DataFrame({"model": ["E"] * 3, "metric": ["avg", "1-hop", "5-hop"], "value": [40.04, 50.0, 25.0]})
    card = pd.DataFrame({"model": ["SmolLM2-135M"], "metric": ["avg"], "value": [27.123]})
    values = lm_page.headline_values(by_hop, card, "E", "control")
    assert values == {"embedded_avg": "40.0", "embedded_hop1": "50.0", "embedded_hop5": "25.0",
                      "card_smollm_avg": "27.12", "control_avg": "n/a"}


def _three_probe_summary(linear_marks):
    """Model m1's linear probe right on ``linear_marks`` of each problem's 6 NSD rows; majority and text
    only right on 3 of 6 (chance); 10 test problems."""
    rows = [_row(f"p{i}", lab, "nsd", step=1) for i in range(10) for lab in (1, 1, 1, 0, 0, 0)]
    labels = [r.label for r in rows]
    linear = [lab if k % 6 < linear_marks else 1 - lab for k, lab in enumerate(labels)]
    tables = [predict_table(rows, linear).assign(probe="linear probe"),
              predict_table(rows, [1] * len(rows)).assign(probe="majority class"),
              predict_table(rows, [1 - lab if k % 6 in (0, 3, 4) else lab for k, lab in enumerate(labels)])
              .assign(probe="text only (candidate line)")]
    from finelogic.eval.probing import summarize
    return summarize(pd.concat(tables).assign(model="m1", readout="chat"))


def test_table4_with_cis_shows_each_value_with_its_interval():
    table = probing_page.table4_with_cis(_three_probe_summary(6), "chat")
    assert table.index.tolist() == [("m1", "linear probe"), ("(labels only)", "majority class"),
                                    ("(candidate text only)", "text only (candidate line)")]
    assert table.loc[("m1", "linear probe"), "NSD (%)"] == "100.0 [72.2, 100.0]"  # 10 of 10 problems: Wilson
    assert table.loc[("(labels only)", "majority class"), "NSD rows (%)"] == "50.0 [50.0, 50.0]"
    assert table.loc[("(candidate text only)", "text only (candidate line)"), "NSD (%)"] == "0.0 [0.0, 27.8]"  # 0 of 10: Wilson


def test_finding_text_says_what_the_data_support():
    clear = findings.finding_text(_three_probe_summary(6), "chat", "m1")
    assert clear == ("On 10 test problems the probe of m1 beats the text-only and majority baselines beyond their "
                     "95% CIs on NSD 100.0% of rows [100.0, 100.0].")
    none = findings.finding_text(_three_probe_summary(3), "chat", "m1")
    assert none.startswith("On 10 test problems no probe of m1 beats all of the text-only and majority baselines "
                           "beyond their 95% CIs: NSD 50.0% of rows")
    assert "not beyond the text-only baseline's" in none and "the majority class's 50.0% of rows [50.0, 50.0]" in none
    assert none.endswith("At this size the data support no claim that its states encode more than those baselines "
                         "pick up.")


def test_finding_text_names_the_baselines_a_probe_clears_and_those_it_does_not():
    """A probe above the random-init control but within the text-only baseline's CI: the sentence must not
    say its CI overlaps the control's (an earlier wording did, for the tiny book's CSS and RFI rows)."""
    m1 = _three_probe_summary(3)  # m1 right on 3 of 6 rows a problem, as the text-only baseline
    rows = [_row(f"p{i}", lab, "nsd", step=1) for i in range(10) for lab in (1, 1, 1, 0, 0, 0)]
    wrong = [1 - r.label for r in rows]  # the control is always wrong
    from finelogic.eval.probing import summarize
    control = summarize(predict_table(rows, wrong).assign(probe="linear probe", model="ctl", readout="chat"))
    summary = pd.concat([m1, control], ignore_index=True)
    text = findings.finding_text(summary, "chat", "m1", control="ctl")
    ours = summary[(summary.model == "m1") & (summary.probe == "linear probe")].iloc[0]
    ctl = summary[summary.model == "ctl"].iloc[0]
    assert ours.row_ci_low > ctl.row_ci_high  # the probe clears the control...
    assert "beyond the random-init control's 0.0% of rows [0.0, 0.0]" in text
    assert "not beyond the random-init control" not in text
    assert "not beyond the text-only baseline's" in text  # ...but not the text-only baseline


# --- LogicMark: our rows beside the card's nearest, the finding box, the gap section ---------------------


def _lm_by_hop(cells):
    """A card-layout frame from ``{model: {metric: (value, low, high, n)}}``."""
    return pd.DataFrame([{"model": model, "setting": "", "metric": metric, "value": v, "ci_low": lo, "ci_high": hi,
                          "n": n} for model, metrics in cells.items() for metric, (v, lo, hi, n) in metrics.items()])


def _lm_fixture(gemma_avg=(40.0, 35.0, 45.0, 300), embedded_hop1=(38.0, 29.1, 47.8, 100)):
    hops = {f"{h}-hop": (30.0, 20.0, 40.0, 100) for h in (2, 3, 4, 5)}
    return _lm_by_hop({
        "E": {"1-hop": embedded_hop1, **hops, "avg": (31.9, 29.5, 34.3, 1000), "item_mean": (31.9, 29.1, 34.9, 1000)},
        "G": {"1-hop": (30.0, 20.0, 40.0, 30), **hops, "avg": gemma_avg, "item_mean": (40.0, 34.6, 45.6, 300)},
        "C": {"1-hop": (25.0, 15.0, 35.0, 50), **hops, "avg": (25.1, 21.0, 29.2, 500),
              "item_mean": (25.0, 21.4, 29.0, 500)},
    })


_LM_CARD = pd.DataFrame({"model": ["SmolLM2-135M"] * 6 + ["gpt2"] * 6,
                         "setting": "", "metric": [*lm_page.TABLE_METRICS] * 2,
                         "value": [58.8, 49.35, 34.8, 36.67, 29.6, 42.78, 56.0, 51.05, 36.48, 38.8, 31.0, 44.06]})


def test_ours_and_nearest_puts_our_intervals_above_the_cards_reported_points():
    table = lm_page.ours_and_nearest(_lm_fixture(), _LM_CARD, nearest=("SmolLM2-135M", "not-on-the-card", "gpt2"))
    assert table["model"].tolist() == ["E", "G", "C", "SmolLM2-135M", "gpt2"]
    assert table["source"].tolist() == [lm_page.OURS_SOURCE] * 3 + [lm_page.CARD_SOURCE] * 2
    assert table["items"].tolist()[:3] == [1000, 300, 500] and table["items"].isna().tolist()[3:] == [True, True]
    assert table.loc[0, ["1-hop", "1-hop low", "1-hop high"]].tolist() == [38.0, 29.1, 47.8]
    card = table[table["source"] == lm_page.CARD_SOURCE].set_index("model")
    assert card.loc["SmolLM2-135M", "avg"] == 42.78 and card[["avg low", "avg high"]].isna().all().all()
    shown = lm_page.ours_and_nearest_view(_lm_fixture(), _LM_CARD, nearest=("SmolLM2-135M",)).frame
    assert shown.iloc[0]["1-hop"] == "38.0 [29.1, 47.8]" and shown.iloc[-1]["1-hop"] == "58.8"
    assert shown.iloc[-1]["Source"] == "card (reported)"


def test_logicmark_finding_says_which_rows_clear_the_control_and_how_the_embedded_row_meets_the_card():
    from types import SimpleNamespace

    from finelogic.book import findings

    text = findings.logicmark_models(SimpleNamespace(by_hop=_lm_fixture()), ["E", "G", "missing"], "C", _LM_CARD,
                                     reference="E")
    assert text.startswith("Against the random-init control (card-style average 25.1% [21.0, 29.2] (n = 500)), "
                           "above it: E 31.9% [29.5, 34.3] (n = 1000); G 40.0% [35.0, 45.0] (n = 300) "
                           "(apart only where the 95% intervals do not overlap). ")
    assert "missing" not in text
    assert ("Beside the card's SmolLM2-135M row, reported on the card's own items (card, \"Benchmark Results\"), E: "
            "its average 31.9% [29.5, 34.3] (n = 1000) is below the card's 42.78%; its 1-hop accuracy 38.0% "
            "[29.1, 47.8] (n = 100) is below the card's 58.80%.") in text
    # One number changed: Gemma's interval now reaches into the control's, so it is no longer "above".
    overlapping = _lm_fixture(gemma_avg=(33.0, 28.0, 38.0, 300))
    text = findings.logicmark_models(SimpleNamespace(by_hop=overlapping), ["E", "G"], "C", _LM_CARD, reference="E")
    assert ("above it: E 31.9% [29.5, 34.3] (n = 1000), and indistinguishable from it: G 33.0% [28.0, 38.0] "
            "(n = 300) (apart") in text
    # One number changed: the embedded 1-hop interval now reaches the card's 58.80%.
    wide_hop1 = _lm_fixture(embedded_hop1=(50.0, 40.0, 60.0, 30))
    text = findings.logicmark_models(SimpleNamespace(by_hop=wide_hop1), ["E", "G"], "C", _LM_CARD, reference="E")
    assert "its 1-hop accuracy 50.0% [40.0, 60.0] (n = 30) is indistinguishable from the card's 58.80%" in text


def test_logicmark_finding_without_control_or_average_falls_back_and_says_so():
    from types import SimpleNamespace

    from finelogic.book import findings

    by_hop = _lm_fixture()
    by_hop = by_hop[by_hop["model"] == "E"].copy()
    by_hop.loc[by_hop["metric"] == "avg", ["value", "ci_low", "ci_high"]] = float("nan")  # an empty hop bucket
    text = findings.logicmark_models(SimpleNamespace(by_hop=by_hop), ["E", "G"], "C", _LM_CARD, reference="E")
    assert text.startswith("This run scored no random-init control, so it shows no model above one.")
    assert "its accuracy over all items 31.9% [29.1, 34.9] (n = 1000) is below the card's 42.78%" in text
    assert "supports nothing" in findings.logicmark_models(SimpleNamespace(by_hop=pd.DataFrame()), ["E"], "C", _LM_CARD)


def _variants(one_hop_of_b=40.0):
    rows = []
    for setting, values in (("ours", [30, 35, 30, 30, 25]), ("b", [one_hop_of_b, 35, 30, 30, 25])):
        for h, v in enumerate(values, 1):
            rows.append({"model": "M", "setting": setting, "metric": f"{h}-hop", "value": float(v),
                         "ci_low": v - 10.0, "ci_high": v + 12.0, "n": 30 if h in (1, 5) else 100,
                         "change": f"change {setting}"})
    return pd.DataFrame(rows)


def test_gap_sentence_names_the_variants_with_the_cards_hop_profile_from_the_numbers():
    profiles = lm_page.gap_profiles(_variants())
    assert profiles.set_index("setting")["card_profile"].to_dict() == {"ours": False, "b": True}
    assert profiles["smallest_bucket"].tolist() == [30, 30] and profiles["widest_interval"].tolist() == [22.0, 22.0]
    text = lm_page.gap_sentence(profiles)
    assert "as in 15 of the card's 19 rows, and 5-hop below 2-hop, as in 19 of them" in text
    assert "**M**: `b` reproduces it; `ours` does not." in text and "holds 30 items" in text
    # One number changed: b's 1-hop falls below its 2-hop, and b loses the profile.
    text = lm_page.gap_sentence(lm_page.gap_profiles(_variants(one_hop_of_b=34.0)))
    assert "**M**: no variant reproduces it; `ours`, `b` do not." in text


def test_property_summary_counts_holds_and_names_what_differs():
    properties = pd.DataFrame({"property": ["a", "b", "c", "d"],
                               "verdict": ["holds", "differs", "holds", "not stated"]})
    assert lm_page.property_summary(properties).endswith(", 2 hold and 1 differ: `b`; `d` is not stated.")


def test_gemma_status_says_how_many_items_or_why_there_is_no_row():
    from types import SimpleNamespace

    from finelogic.runs.logicmark import GEMMA

    items = pd.DataFrame({"model": ["E"] * 4 + [GEMMA] * 2})
    scored = SimpleNamespace(provenance=SimpleNamespace(models=("E", GEMMA), n=4, data={}, profile="tiny"), items=items)
    assert lm_page.gemma_status(scored).endswith("on its first 2 of 4 items (llama.cpp, in process).")
    missing = SimpleNamespace(provenance=SimpleNamespace(models=("E",), n=4, data={"gemma": "not installed: x"},
                                                         profile="tiny"), items=items)
    assert lm_page.gemma_status(missing) == "This run has no Gemma 3 270M base row: not installed: x."
    smoke = SimpleNamespace(provenance=SimpleNamespace(models=("E",), n=4, data={}, profile="smoke"), items=items)
    assert "the `smoke` profile does not score it" in lm_page.gemma_status(smoke)
