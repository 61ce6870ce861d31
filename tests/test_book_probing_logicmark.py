"""Display helpers of the probing (05) and LogicMark (07) pages: what each table shows, on hand-made runs."""
from __future__ import annotations

import pandas as pd

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
    assert table.loc[("m1", "linear probe"), "NSD (%)"] == "100.0 [100.0, 100.0]"
    assert table.loc[("(labels only)", "majority class"), "NSD rows (%)"] == "50.0 [50.0, 50.0]"
    assert table.loc[("(candidate text only)", "text only (candidate line)"), "NSD (%)"] == "0.0 [0.0, 0.0]"


def test_finding_text_says_what_the_data_support():
    clear = probing_page.finding_text(_three_probe_summary(6), "chat", "m1")
    assert clear == ("On 10 test problems the probe of m1 beats the text-only and majority baselines beyond their "
                     "95% CIs on NSD 100.0% of rows [100.0, 100.0].")
    none = probing_page.finding_text(_three_probe_summary(3), "chat", "m1")
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
    text = probing_page.finding_text(summary, "chat", "m1", control="ctl")
    ours = summary[(summary.model == "m1") & (summary.probe == "linear probe")].iloc[0]
    ctl = summary[summary.model == "ctl"].iloc[0]
    assert ours.row_ci_low > ctl.row_ci_high  # the probe clears the control...
    assert "beyond the random-init control's 0.0% of rows [0.0, 0.0]" in text
    assert "not beyond the random-init control" not in text
    assert "not beyond the text-only baseline's" in text  # ...but not the text-only baseline
