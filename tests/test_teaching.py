"""The teaching chapters' helpers (finelogic.book.teaching): each worked example says what it claims."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from finelogic.book import teaching
from finelogic.data.problem import Fact, Problem


def tiny_problem(hypothesis: str = "{B}{a}", proof: str | None = "fact1 & fact2 -> hypothesis;") -> Problem:
    """fact1: A(a); fact2: A(a) -> B(a); fact3 (a distractor): C(a) -> D(a)."""
    formulas = {"fact1": "{A}{a}", "fact2": "{A}{a} -> {B}{a}", "fact3": "{C}{a} -> {D}{a}",
                "hypothesis": hypothesis}
    facts = (Fact("fact1", "the cat is red."), Fact("fact2", "if the cat is red then the cat is big."),
             Fact("fact3", "if the cat is old then the cat is shy."))
    return Problem("tiny", "fld", facts, "the cat is big.", label="PROVED", depth=1, proof=proof,
                   formulas=formulas, meta={"distractors": ["fact3"]})


def test_decide_label_reads_the_facts_with_z3():
    assert teaching.decide_label(tiny_problem()) == "PROVED"
    assert teaching.decide_label(tiny_problem("¬{B}{a}")) == "DISPROVED"
    assert teaching.decide_label(tiny_problem("{D}{a}")) == "UNKNOWN"


def test_removing_a_used_fact_makes_the_label_unknown_and_a_distractor_changes_nothing():
    table = teaching.removal_table(tiny_problem())
    assert table.loc["fact1", "label without it"] == "UNKNOWN"
    assert table.loc["fact2", "label without it"] == "UNKNOWN"
    assert table.loc["fact3", "label without it"] == "PROVED"
    assert table.loc["fact3", "role"] == "distractor"
    assert table.loc["fact1", "role"] == "used by the gold proof"


def test_generated_example_has_distractors_and_every_proof_leaf_is_necessary():
    problem = teaching.fld_example(0)
    assert problem.label == "PROVED" and len(problem.meta["distractors"]) >= 2
    assert teaching.decide_label(problem, without=problem.meta["distractors"]) == "PROVED"
    removal = teaching.removal_table(problem)
    assert set(removal.loc[removal["role"] == "distractor", "label without it"]) == {"PROVED"}
    assert set(removal.loc[removal["role"] != "distractor", "label without it"]) == {"UNKNOWN"}


def test_proof_steps_table_names_one_rule_per_step():
    steps = teaching.proof_steps_table(tiny_problem())
    assert steps.loc[1, "rule"] == "modus_ponens"
    assert steps.loc[1, "conclusion"] == "hypothesis"
    assert steps.loc[1, "sentence"] == "the cat is big."
    generated = teaching.proof_steps_table(teaching.fld_example(0))
    assert (generated["rule"] != "").all() and not generated["rule"].str.contains(",").any()


def test_merged_gold_steps_recovers_the_two_steps_a_merge_skipped():
    problem = tiny_problem(proof="fact1 -> int1: the cat is red.; int1 & fact2 -> int2: the cat is big.; "
                                 "int2 -> hypothesis;")
    split = teaching.merged_gold_steps(problem, ["fact1", "fact2"], "int2")
    assert [s.format() for s in split] == ["fact1 -> int1: the cat is red.", "int1 & fact2 -> int2: the cat is big."]
    assert teaching.gold_step_for(problem, "hypothesis").premises == ("int2",)
    with pytest.raises(KeyError):
        teaching.gold_step_for(problem, "int9")


def test_soundness_example_shows_each_kind_of_step_once_judged_live():
    problem, response = teaching.soundness_example(0)
    steps = teaching.judge_response(problem, response)
    kinds = set(steps["verdict"])
    assert {"sound", "non-atomic", "invalid", "irrelevant"} <= kinds
    assert bool(teaching.first_step_of(steps, "invalid")["valid"]) is False
    table = teaching.verdict_table(steps)
    assert list(table.index) == list(range(1, len(steps) + 1))
    with pytest.raises(ValueError):
        teaching.first_step_of(steps, "undecided")


def test_toy_probe_decodes_the_computed_feature_only_from_the_trained_toy_model():
    table = teaching.toy_probe_table(0)
    assert table.loc["words differ", "trained (toy)"] > 90
    assert table.loc["words differ", "random-init (toy)"] < 65  # XOR is not linear in the input words
    assert table.loc["word present", "random-init (toy)"] > 90  # surface features survive random mixing
    assert table.loc["rare event", "majority class"] > 75  # one row in eight is positive


def test_toy_features_are_deterministic_and_shaped():
    words, features = teaching.toy_features(10, seed=3, words=6, dim=16)
    again, features_again = teaching.toy_features(10, seed=3, words=6, dim=16)
    assert words.shape == (10, 6) and (words == again).all()
    assert set(features) == set(teaching.TOY_MODELS)
    assert all(f.shape == (10, 16) and (f == features_again[k]).all() for k, f in features.items())


def test_premise_bigram_scorer_log_probabilities_by_hand():
    # context "abab": pairs ab x2, ba x1; pair starts a x2, b x1; last character "b".
    scorer = teaching.PremiseBigramScorer()
    (one, two, unseen) = scorer.loglikelihood([("abab", "a"), ("abab", "ab"), ("abab", "z")])
    assert one == (pytest.approx(math.log(2 / 96)), 1, True)
    assert two == (pytest.approx(math.log(2 / 96) + math.log(3 / 97)), 2, True)
    assert unseen == (pytest.approx(math.log(1 / 96)), 1, False)


def test_option_table_marks_what_each_normalisation_picks():
    from finelogic.data import generate
    from finelogic.eval.logicmark import NORMALIZATIONS, score

    items = generate("logicmark", n=3, seed=0)
    records = score(items, teaching.make_scorer("toy"))
    table = teaching.option_table(records.iloc[0])
    assert list(table.index) == list(items[0].options)
    assert table["correct"].sum() == 1
    picked = [name for cell in table["picked by"] for name in cell.split(", ") if name]
    assert sorted(picked) == sorted(NORMALIZATIONS)  # each normalisation picks exactly one option
    assert (table["tokens"] == [len(o) + 1 for o in items[0].options]).all()  # one token per character + space


def test_prediction_shares_count_equalities_per_normalisation():
    records = pd.DataFrame({
        "option_0": ["a = b", "c != d"], "option_1": ["a != b", "c = d"],
        "pred_token_mean": [1, 0], "pred_char": [1, 1], "pred_none": [0, 1],
        "correct_token_mean": [True, True], "correct_char": [True, False], "correct_none": [False, False],
    })
    shares = teaching.prediction_shares(records)
    assert shares.loc["none", "predicts '=' (%)"] == 100.0
    assert shares.loc["token_mean", "predicts '=' (%)"] == 0.0
    assert shares.loc["char", "predicts '=' (%)"] == 50.0
    assert shares.loc["char", "accuracy (%)"] == 50.0


def test_make_scorer_names_the_choices():
    with pytest.raises(ValueError, match="toy"):
        teaching.make_scorer("gpt")


def test_the_embedded_scorer_is_opened_by_open_model_and_loads_no_weights_until_asked():
    from finelogic.models.cache import CachedBackend

    backend = teaching.make_scorer("embedded")
    assert isinstance(backend, CachedBackend) and not backend.loaded
    assert backend.model_id.startswith("embedded:")


def test_necessary_facts_check_says_correct_only_for_the_facts_whose_removal_changes_the_label():
    problem = tiny_problem()
    assert repr(teaching.check_necessary_facts(problem, [])).startswith("No answer yet")
    correct = teaching.check_necessary_facts(problem, ["fact1", "fact2"])
    assert correct.correct is True
    assert repr(correct).startswith("Correct. Without any one of fact1, fact2 the label is no longer PROVED")
    wrong = teaching.check_necessary_facts(problem, ["fact1", "fact3"])
    assert wrong.correct is False
    out = wrong.message
    assert "Removing fact2 also changes the label" in out and "without fact3 the label is still PROVED" in out
    assert teaching.check_necessary_facts(problem, ["fact9"]).correct is False


def test_corrected_step_check_judges_the_step_inside_the_response():
    problem, response = teaching.soundness_example(1)  # seed 1: the invalid step's gold premises include an int
    invalid = teaching.first_step_of(teaching.judge_response(problem, response), "invalid")
    gold = teaching.gold_step_for(problem, invalid["conclusion_id"])
    # The gold step cites an earlier conclusion (int2): judged inside the response, it is defined.
    assert any(p.startswith("int") for p in gold.premises)
    assert teaching.check_corrected_step(problem, response, gold.format()).correct is True
    assert teaching.check_corrected_step(problem, response, invalid["raw"]).correct is False
    assert teaching.check_corrected_step(problem, response, gold.format().replace(gold.conclusion, "int99")).correct is False
    assert teaching.check_corrected_step(problem, response, "no arrow here").correct is False
    assert teaching.check_corrected_step(problem, response, "fact? -> int?").correct is None


def test_majority_accuracy_check_accepts_the_toy_tables_majority_class_only():
    expected = 85.0  # seed 0: 15% of the 300 test rows are positive, so always answering 0 scores 85%
    assert teaching.check_majority_accuracy(expected, 0).correct is True
    share = teaching.check_majority_accuracy(expected / 100, 0)
    assert share.correct is False and "multiply by 100" in share.message
    assert teaching.check_majority_accuracy(None).correct is None


def test_pick_check_reads_the_option_the_normalisation_picked():
    record = {"option_0": "a = b", "option_1": "a != b", "pred_none": 0, "pred_token_mean": 1}
    assert teaching.check_pick(record, "none", "a = b").correct is True
    assert teaching.check_pick(record, "token_mean", "a = b").correct is False
    assert teaching.check_pick(record, "token_mean", " a != b ").correct is True
    assert teaching.check_pick(record, "none", None).correct is None


def test_plain_markdown_turns_glue_admonitions_and_roles_into_text_nbconvert_renders():
    from finelogic.book.handouts import plain_markdown

    glue = {"label": {"text/plain": "'PROVED'"}, "table": {"text/html": "<table><tr><td>1</td></tr></table>"}}
    text = ("The label is {glue:text}`label`; see {doc}`the reproduce page <reproduce>`.\n\n"
            "````{admonition} Solution\n:class: dropdown\n\nIt is **{glue:text}`label`**:\n\n```{glue} table\n```\n````")
    assert plain_markdown(text, glue) == ("The label is PROVED; see the reproduce page.\n\n**Solution.**\n\n\n"
                                          "It is **PROVED**:\n\n<table><tr><td>1</td></tr></table>\n")


def test_student_handout_has_no_solution_cell_and_the_instructor_handout_has_them(tmp_path):
    import nbformat

    from finelogic.book.handouts import handout_path, write_handouts

    nb = nbformat.v4.new_notebook()
    solution = nbformat.v4.new_markdown_cell("````{admonition} Solution\n:class: dropdown\n\nThe answer is forty-two.\n````")
    solution.metadata["tags"] = ["solution"]
    build = nbformat.v4.new_code_cell("secret_build_code = 1", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/markdown": "**Shown** output"})])
    build.metadata["tags"] = ["hide-input"]
    answer = nbformat.v4.new_code_cell("answer = None  # your answer")
    nb.cells = [nbformat.v4.new_markdown_cell("# Chapter\n\n**Exercise 1.** What is six times seven?"), solution,
                build, answer]
    nbformat.write(nb, tmp_path / "t9_toy.ipynb")
    assert write_handouts(tmp_path, ("t9_toy", "t8_not_run")) == [
        handout_path(tmp_path, "t9_toy", "student"), handout_path(tmp_path, "t9_toy", "instructor")]
    import html
    import re

    def text(version):  # what a reader sees: the page without its tags
        return html.unescape(re.sub(r"<[^>]+>", "", handout_path(tmp_path, "t9_toy", version).read_text()))

    student, instructor = text("student"), text("instructor")
    assert "six times seven" in student and "answer = None" in student and "Shown" in student
    assert "forty-two" not in student and "Solution" not in student and "secret_build_code" not in student
    assert "The answer is forty-two." in instructor and "{admonition}" not in instructor


def _toy_chapter(tmp_path, name="t9_print"):
    """An executed-looking chapter with what a printed page must hold: a title, a 7-inch figure, a code line
    far wider than the page, a wide table and a solution."""
    import matplotlib.pyplot as plt
    import nbformat

    from finelogic.book import figures

    fig, axes = figures.new_figure(height=4.0)
    axes[0, 0].plot([0, 1], [0, 1])
    axes[0, 0].set(title="A seven-inch figure", xlabel="x", ylabel="y")
    markup = figures.figure_html(fig, "A line from (0, 0) to (1, 1), drawn at page width.")
    plt.close(fig)
    figure = nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": markup, "text/plain": "[figure]"})])
    figure.metadata["tags"] = ["hide-input"]
    long_code = "result = " + " + ".join(f"value_number_{i}" for i in range(30)) + "  # far wider than a page"
    table = "<table><tr>" + "".join(f"<th>column_heading_{i}</th>" for i in range(12)) + "</tr><tr>" + "".join(
        f"<td>{i * 1234.5678:.4f}</td>" for i in range(12)) + "</tr></table>"
    wide = nbformat.v4.new_code_cell("table()", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": table, "text/plain": "[table]"})])
    wide.metadata["tags"] = ["hide-input"]
    solution = nbformat.v4.new_markdown_cell("````{admonition} Solution\n:class: dropdown\n\nForty-two.\n````")
    solution.metadata["tags"] = ["solution"]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Printing a chapter\n\n**Exercise 1.** Six times seven?"), solution,
                figure, nbformat.v4.new_code_cell(long_code), wide]
    nbformat.write(nb, tmp_path / f"{name}.ipynb")
    return name


def test_without_chromium_the_pdf_handouts_are_skipped_with_one_log_line_and_a_note_in_their_place(
        tmp_path, monkeypatch, caplog):
    import logging

    from finelogic.book import handouts

    monkeypatch.setattr(handouts, "find_chromium", lambda: None)
    name = _toy_chapter(tmp_path)
    with caplog.at_level(logging.INFO, logger=handouts.__name__):
        written = handouts.write_handouts(tmp_path, (name,))
    assert written == [handouts.handout_path(tmp_path, name, v) for v in handouts.VERSIONS]
    lines = [r.getMessage() for r in caplog.records if "PDF" in r.getMessage()]
    assert len(lines) == 1 and "chromium not found" in lines[0] and "not printed" in lines[0]
    for html_file in written:  # the chapters' {download} links still find a file: a one-page note
        assert handouts.pdf_path(html_file).read_bytes().startswith(b"%PDF-")
        assert "PRINT_CSS" not in html_file.read_text() and "@page { size: A4" in html_file.read_text()


def test_handouts_of_an_unchanged_chapter_are_kept_and_a_changed_chapter_gets_new_ones(tmp_path, monkeypatch):
    import nbformat

    from finelogic.book import handouts

    monkeypatch.setattr(handouts, "find_chromium", lambda: None)  # the one-page notes: no browser needed
    name = _toy_chapter(tmp_path)
    first = handouts.write_handouts(tmp_path, (name,))
    files = [*first, *(handouts.pdf_path(h) for h in first)]
    for path in files:
        path.write_bytes(path.read_bytes() + b"\n<!-- as first written -->")  # a mark a rewrite would lose
    assert handouts.write_handouts(tmp_path, (name,)) == first  # nothing changed: kept, not rewritten
    assert all(path.read_bytes().endswith(b"<!-- as first written -->") for path in files)

    handouts.pdf_path(first[0]).unlink()  # a handout file gone: made again
    handouts.write_handouts(tmp_path, (name,))
    assert handouts.pdf_path(first[0]).read_bytes().startswith(b"%PDF-")

    nb = nbformat.read(tmp_path / f"{name}.ipynb", as_version=4)  # the chapter run again with a new result
    nb.cells.append(nbformat.v4.new_markdown_cell("A sentence added by the new run."))
    nbformat.write(nb, tmp_path / f"{name}.ipynb")
    handouts.write_handouts(tmp_path, (name,))
    assert all("A sentence added by the new run." in h.read_text() for h in first)


def test_a_chapter_run_again_with_the_same_results_keeps_its_handouts_which_show_no_build_time(tmp_path,
                                                                                               monkeypatch):
    import nbformat

    from finelogic.book import handouts
    from finelogic.book.provenance import rerun_text

    monkeypatch.setattr(handouts, "find_chromium", lambda: None)
    name = _toy_chapter(tmp_path)

    def run_again(seconds, execution_count):  # what the runner leaves: this run's date and time in the boxes
        nb = nbformat.read(tmp_path / f"{name}.ipynb", as_version=4)
        made = f"**How this page was made.**\n\n- **profile**: `tiny`\n- **built**: 2026-12-03 12:{execution_count:02d} UTC"
        boxes = [nbformat.v4.new_code_cell(source, execution_count=execution_count, outputs=[nbformat.v4.new_output(
            "display_data", data={"text/markdown": text})]) for source, text in
            (("provenance()", made), ("rerun_box()", rerun_text(name, "tiny", seconds=seconds)))]
        for box in boxes:
            box.metadata["tags"] = ["hide-input"]
        nb.cells = [c for c in nb.cells if c.source not in ("provenance()", "rerun_box()")] + boxes
        nb.metadata["papermill"] = {"duration": seconds}
        nbformat.write(nb, tmp_path / f"{name}.ipynb")

    run_again(5.0, 1)
    first = handouts.write_handouts(tmp_path, (name,))
    import html
    import re

    shown = [html.unescape(re.sub(r"<[^>]+>", "", h.read_text())) for h in first]  # the page without its tags
    assert all(f"--notebook {name}" in text and "12:01 UTC" in text and "5.0 s" not in text for text in shown)
    for path in first:
        path.write_bytes(path.read_bytes() + b"\n<!-- as first written -->")
    run_again(5.7, 2)  # same results, another build time and execution count: kept
    handouts.write_handouts(tmp_path, (name,))
    assert all(h.read_bytes().endswith(b"<!-- as first written -->") for h in first)


def pdf_report(pdf, tolerance_pt: float = 1.0) -> dict:
    """What a teacher checks first in a printed handout, read with poppler's ``pdftotext -bbox``: ``pages``,
    ``text`` and ``beyond_margin`` (``(page, word, x_max_pt, limit_pt)`` per word running past the right
    margin).

    Raises:
        FileNotFoundError: poppler's ``pdftotext`` is not installed (apt-get install poppler-utils).
    """
    import html as html_module
    import re
    import shutil
    import subprocess

    from finelogic.book.handouts import RIGHT_MARGIN_MM

    if not shutil.which("pdftotext"):
        raise FileNotFoundError("pdftotext (poppler-utils) is not installed")
    out = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = re.findall(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', out, re.S)
    words, beyond = [], []
    for number, (width, _, body) in enumerate(pages, 1):
        limit = float(width) - RIGHT_MARGIN_MM / 25.4 * 72 + tolerance_pt
        for match in re.finditer(r'<word xMin="[\d.]+" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>',
                                 body):
            word = html_module.unescape(match.group(2))
            words.append(word)
            if float(match.group(1)) > limit:
                beyond.append((number, word, float(match.group(1)), round(limit, 1)))
    return {"pages": len(pages), "text": " ".join(words), "beyond_margin": beyond}


def test_pdf_handouts_printed_by_chromium_hold_the_chapter_within_the_page(tmp_path):
    import shutil

    from finelogic.book import handouts

    if handouts.find_chromium() is None or not shutil.which("pdftotext"):
        pytest.skip("needs Debian's chromium and poppler-utils (apt-get install chromium poppler-utils)")
    name = _toy_chapter(tmp_path)
    written = handouts.write_handouts(tmp_path, (name,))
    reports = {v: pdf_report(handouts.pdf_path(h)) for v, h in zip(handouts.VERSIONS, written)}
    for version, report in reports.items():
        assert report["pages"] > 0, version
        assert "Printing a chapter" in report["text"], version
        assert "far wider than a page" in report["text"], version  # the long code line wrapped, not cut
        # The wide table is all on the page: its last column is there (its words may be broken across lines).
        joined = "".join(report["text"].split())
        assert "column_heading_11" in joined and "13580.2458" in joined
        assert report["beyond_margin"] == [], (version, report["beyond_margin"][:5])
    assert "Forty-two" in reports["instructor"]["text"] and "Forty-two" not in reports["student"]["text"]
