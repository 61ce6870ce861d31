"""The book's figures: one theme (fonts >= 10 pt at page width, labelled axes, legends off the data), the
paper's numbers drawn beside ours and labelled as reported, never an empty chart, alt text on every figure,
proof trees whose arrows never pass behind a box."""
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from finelogic import paper  # noqa: E402
from finelogic.book import figures  # noqa: E402
from finelogic.book.tables import paper_table  # noqa: E402

BUCKETS = ["0-3", "4-7", "8-11", "12-15", "16-19"]


def drawn(fig):
    """Draw ``fig`` under the theme (ticks are made at draw time) and return its renderer."""
    import matplotlib.pyplot as plt

    with plt.rc_context(figures.theme()):
        fig.canvas.draw()
    return fig.canvas.get_renderer()


def texts(fig):
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def legend_labels(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def assert_book_figure(fig):
    """The checks every figure of the book passes."""
    renderer = drawn(fig)
    assert fig.get_size_inches()[0] <= figures.PAGE_WIDTH
    small = [(t.get_text(), t.get_fontsize()) for t in texts(fig) if t.get_fontsize() < figures.MIN_FONT]
    assert not small, small
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    for ax in panels:
        assert ax.get_legend() is None  # one legend per figure, below the panels
        siblings_y = ax.get_shared_y_axes().get_siblings(ax)
        siblings_x = ax.get_shared_x_axes().get_siblings(ax)
        assert any(a.get_ylabel() for a in siblings_y), ax.get_title()
        assert any(a.get_xlabel() for a in siblings_x), ax.get_title()
        for label in ax.get_xticklabels():
            assert not label.get_text().startswith("("), label.get_text()  # no raw tuples
    labels = []
    for ax in panels:
        low, high = sorted(ax.get_xlim())
        labels += [t for t in ax.get_xticklabels() if low - 1e-9 <= t.get_position()[0] <= high + 1e-9]
        low, high = sorted(ax.get_ylim())
        labels += [t for t in ax.get_yticklabels() if low - 1e-9 <= t.get_position()[1] <= high + 1e-9]
        labels += [ax.xaxis.label, ax.yaxis.label]
    labels = [t for t in labels if t.get_visible() and t.get_text().strip()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    for i, (a, box_a) in enumerate(boxes):  # no axis or tick label runs into another
        assert not any(box_a.overlaps(box_b) for _, box_b in boxes[i + 1:]), (a, [b for b, _ in boxes])
    page = fig.bbox
    ticks = {id(t) for ax in fig.axes for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]}
    for t in [t for t in texts(fig) if id(t) not in ticks] + labels:  # nothing cut off at the figure's edge
        box = t.get_window_extent(renderer)
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, \
            t.get_text()
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        for ax in panels:
            assert not box.overlaps(ax.get_window_extent(renderer)), legend_labels(fig)
    alt = figures.alt_text(fig)
    assert len(alt.split()) >= 8 and not re.fullmatch(r"[0-9a-f]{16,}(\.png)?", alt)
    return renderer


def test_accuracy_bars_draw_ours_with_intervals_and_the_papers_models_in_the_same_setting():
    summary = pd.DataFrame({"model": ["ours-model"] * 4, "setting": ["Direct", "Direct", "CoT", "CoT"],
                            "dataset": ["fld", "folio"] * 2, "accuracy": [33.3, 100.0, 50.0, 0.0],
                            "ci_low": [6.1, 43.9, 9.5, 0.0], "ci_high": [79.2, 100.0, 90.5, 56.1]})
    fig = figures.accuracy_bars(summary, names={"fld": "FLD", "folio": "FOLIO"})
    assert_book_figure(fig)
    direct, cot = fig.axes
    assert [round(p.get_height(), 1) for p in direct.patches] == [33.3, 100.0]
    assert [t.get_text() for t in cot.get_xticklabels()] == ["FLD", "FOLIO"]
    assert direct.get_shared_y_axes().joined(direct, cot)
    # The paper's Direct row of GPT-4o is drawn at its reported FLD and FOLIO values, as a hollow mark.
    gpt = next(line for line in direct.lines if line.get_label() == "paper: GPT-4o (reported)")
    assert list(gpt.get_ydata()) == [paper_table("table2").loc[("GPT-4o", "Direct"), c] for c in ("FLD", "FOLIO")]
    assert gpt.get_markerfacecolor() == "white"
    assert "ours: ours-model" in legend_labels(fig) and "paper: GPT-4o (reported)" in legend_labels(fig)


def test_an_all_zero_accuracy_chart_still_shows_the_paper_and_a_visible_zero():
    summary = pd.DataFrame({"model": ["m"] * 2, "setting": ["CoT"] * 2, "dataset": ["FLD", "ProntoQA"],
                            "accuracy": [0.0, 0.0], "ci_low": [0.0, 0.0], "ci_high": [56.1, 56.1]})
    fig = figures.accuracy_bars(summary)
    assert_book_figure(fig)
    ax = fig.axes[0]
    assert "ours 0% on every dataset" in ax.get_title()
    zero_marks = [line for line in ax.lines if list(line.get_ydata()) == [0.0, 0.0]]
    assert zero_marks and zero_marks[0].get_marker() == "_"
    paper_marks = [line for line in ax.lines if line.get_label().startswith("paper:")]
    assert len(paper_marks) == 4 and all(not np.isnan(line.get_ydata()).all() for line in paper_marks)
    assert "0% everywhere" in figures.alt_text(fig)


def test_depth_figure_separates_five_zero_lines_and_keeps_the_legend_off_the_curves():
    reported = paper_table("table5")
    curves = pd.DataFrame([[0.0] * 5] * 5, columns=BUCKETS, index=pd.MultiIndex.from_tuples(
        [("m", s) for s in ("Direct", "CoT", "Few-shot", "Logic-LM", "SymbCoT")], names=["model", "setting"]))
    fig = figures.accuracy_by_depth(curves, reported)
    assert_book_figure(fig)
    ax = fig.axes[0]
    ours = [line for line in ax.lines if line.get_label().startswith("ours:")]
    assert len(ours) == 5
    assert len({tuple(line.get_xdata()) for line in ours}) == 5  # dodged sideways
    assert len({line.get_marker() for line in ours}) == 5
    assert "ours are 0% everywhere" in ax.get_title()
    direct = [line for line in ax.lines if line.get_label().startswith("paper:")]
    assert [line.get_label() for line in direct][0] == "paper: GPT-4o / Direct (reported)"
    assert list(direct[0].get_ydata()) == list(reported.loc[("GPT-4o", "Direct"), BUCKETS])


def test_figure3_panels_share_one_y_axis_and_label_every_row_as_the_papers():
    fig = figures.paper_figure3(paper_table("table5"))
    assert_book_figure(fig)
    left, right = fig.axes
    assert left.get_shared_y_axes().joined(left, right) and left.get_ylim() == right.get_ylim() == (0, 100)
    assert all(label.startswith("paper: ") and label.endswith("(reported)") for label in legend_labels(fig))


def test_soundness_dot_plot_marks_a_row_with_nothing_scored_instead_of_leaving_it_blank():
    ours = pd.DataFrame({"all_valid": [np.nan], "all_relevant": [np.nan], "all_atomic": [np.nan]}, index=["m / CoT"])
    fig = figures.paper_vs_ours(ours, paper_table("table3")[list(ours.columns)], xlabels="% of samples",
                                title="Table 3")
    assert_book_figure(fig)
    assert "ours: no value (nothing scored)" in legend_labels(fig)
    labels = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()]
    assert labels[0] == "paper: GPT-4o / Few-shot" and labels[-1] == "ours: m / CoT"
    assert all(fig.axes[0].get_shared_y_axes().joined(fig.axes[0], ax) for ax in fig.axes)


def test_table4_dot_plot_gives_each_task_its_own_scale_from_zero():
    ours = pd.DataFrame({"CSS": [2.5], "RFI": [0.0], "NSD": [0.0]}, index=[("m", "linear probe")])
    fig = figures.paper_vs_ours(ours, paper_table("table4")[list(ours.columns)], shared_x=False,
                                xlabels={"CSS": "steps (mean correctness span)", "RFI": "% of test problems",
                                         "NSD": "% of test problems"}, title="Table 4")
    assert_book_figure(fig)
    css, rfi, nsd = fig.axes
    assert css.get_xlim()[0] < 0 < 9.7 < css.get_xlim()[1] < 11  # the paper's largest CSS is 9.7 steps
    assert nsd.get_xlim()[1] > 51.5  # the paper's largest NSD
    assert [t.get_text().replace("\n", " ") for t in css.get_yticklabels()][-1] == "ours: m / linear probe"


def test_logicmark_hop_figure_draws_the_cards_rows_dashed_beside_ours_with_bands_and_chance():
    from finelogic.book import logicmark

    card = paper.reported("logicmark")
    by_hop = pd.DataFrame([dict(model="ours", metric=h, value=40.0, ci_low=30.0, ci_high=50.0)
                           for h in [*logicmark.HOP_COLUMNS, "avg"]])
    fig = logicmark.hop_figure(by_hop, card)
    assert_book_figure(fig)
    labels = legend_labels(fig)
    assert "card: SmolLM2-135M (reported)" in labels and "chance (25%)" in labels and "ours: ours" in labels
    smollm = next(line for line in fig.axes[0].lines if line.get_label() == "card: SmolLM2-135M (reported)")
    assert smollm.get_linestyle() == "--"


def test_grouped_bars_mark_a_zero_bar_and_never_show_a_tuple_as_a_label():
    table = pd.DataFrame({("paper", "GPT-4o", "Few-shot"): [10.0, 0.0]}, index=["all_valid", "all_relevant"]).T
    fig = figures.grouped_bars(table, title="t", xlabel="metric", ylabel="%")
    assert_book_figure(fig)
    assert "paper / GPT-4o / Few-shot" in legend_labels(fig)
    assert any(list(line.get_ydata()) == [0, 0] for line in fig.axes[0].lines)


def test_show_emits_an_image_with_descriptive_alt_text():
    fig = figures.accuracy_by_group(pd.DataFrame([[1.0, 2.0]], columns=["a", "b"], index=["x"]), title="T <1>")
    markup = figures.figure_html(fig)
    alt = re.search(r'alt="([^"]*)"', markup).group(1)
    assert alt.startswith("Line chart: T &lt;1&gt;.") and "ours: x" in alt
    assert 'src="data:image/png;base64,' in markup and f'width="{round(figures.PAGE_WIDTH * 96)}"' in markup


def test_describe_reads_title_axes_and_series_off_a_figure_without_alt_text():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 2], label="loss")
    ax.set(title="Loss", xlabel="step", ylabel="nats")
    fig.legend()
    assert figures.alt_text(fig) == "Panel 'Loss': nats against step. Series: loss."


def segments_hit_box(points, box, eps=1e-6):
    """Whether the polyline ``points`` enters the inside of ``box`` (x0, y0, x1, y1)."""
    x0, y0, x1, y1 = box
    for (ax_, ay), (bx, by) in zip(points, points[1:]):
        for t in np.linspace(0, 1, 200):
            x, y = ax_ + t * (bx - ax_), ay + t * (by - ay)
            if x0 + eps < x < x1 - eps and y0 + eps < y < y1 - eps:
                return True
    return False


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_proof_tree_arrows_run_border_to_border_and_never_behind_another_box(seed):
    from finelogic.book import teaching

    problem = teaching.fld_example(seed)
    fig = figures.proof_tree(problem)
    assert_book_figure(fig)
    extents, routes = fig.finelogic_extents, fig.finelogic_routes
    for (premise, conclusion), points in routes.items():
        px0, _, px1, ptop = extents[premise]
        cx0, cbottom, cx1, _ = extents[conclusion]
        assert points[0][1] == pytest.approx(ptop) and px0 < points[0][0] < px1
        assert points[-1][1] == pytest.approx(cbottom) and cx0 < points[-1][0] < cx1
        for node, box in extents.items():
            assert not segments_hit_box(points, box), (premise, conclusion, node)


def test_proof_tree_draws_exactly_the_steps_of_the_gold_proof():
    from finelogic.book import teaching
    from finelogic.logic.proof import parse_proof_steps

    problem = teaching.fld_example(0)
    fig = figures.proof_tree(problem)
    wanted = {(p, s.conclusion) for s in parse_proof_steps(problem.proof) for p in s.premises}
    assert set(fig.finelogic_routes) == wanted
    assert ("fact3", "int1") in wanted and ("fact11", "int2") in wanted  # the t1 example's first two steps


def test_the_other_chart_helpers_follow_the_theme():
    from types import SimpleNamespace

    from finelogic.book import datasets, logicmark, supervision, teaching
    from finelogic.eval.logicmark import NORMALIZATIONS

    depths = pd.DataFrame({"dataset": ["FLD", "FLD", "ProntoQA"], "depth": [1, 3, 2], "items": [4, 2, 5]})
    fig = datasets.depth_histograms(SimpleNamespace(depths=depths))
    assert_book_figure(fig)
    assert [ax.get_title() for ax in fig.axes] == ["FLD", "ProntoQA"] and "FLD: depths 1, 3" in figures.alt_text(fig)
    losses = pd.DataFrame({"setting": ["SFT-NL"] * 3 + ["SFT-Symb-Struct"] * 3, "step": [1, 2, 3] * 2,
                           "loss": [2.5, 2.0, 1.8, 2.6, 2.2, 1.9]})
    fig = supervision.loss_curves(losses)
    assert_book_figure(fig)
    assert "SFT-NL from 2.50 to 1.80" in figures.alt_text(fig)
    by_style = pd.DataFrame({"model": ["m", "m"], "style": ["chain", "tree"], "accuracy": [0.0, 40.0]})
    fig = logicmark.style_figure(by_style)
    assert_book_figure(fig)
    assert "chance (25%)" in legend_labels(fig)
    table = pd.DataFrame({**{f"score: {n}": [-3.0, -2.0] for n in NORMALIZATIONS}, "correct": [False, True]},
                         index=["A", "B"])
    fig = teaching.normalization_figure(table, title="item")
    assert_book_figure(fig)
    assert "the correct option (B)" in figures.alt_text(fig)


def test_a_dot_plot_without_any_row_of_ours_says_so_in_a_row_of_its_own():
    reported = paper_table("table2").iloc[:3]
    fig = figures.paper_vs_ours(pd.DataFrame(columns=list(reported.columns), dtype=float), reported,
                                xlabels="accuracy (%)", title="Accuracy")
    assert_book_figure(fig)
    labels = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()]
    assert labels[-1] == "ours: nothing evaluated in this run"
    assert "ours: no value (nothing scored)" in legend_labels(fig)
