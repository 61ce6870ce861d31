"""The datasets notebook's run (Table 1): the smoke profile's test sets, counted, and the page's table."""
from __future__ import annotations

import pytest

from finelogic.book import datasets as page
from finelogic.runs import datasets


@pytest.fixture(scope="module")
def run():
    return datasets.run("smoke", seed=0)


def test_smoke_sets_are_generated_fld_and_prontoqa_and_the_real_sets_are_not_present(run):
    assert run.sets.set_index("dataset")["samples"].to_dict() == {"fld": 6, "folio": 0, "multi_logieval": 0,
                                                                  "prontoqa": 6}
    assert run.summary.set_index("dataset")["label_types"].to_dict() == {"FLD": "{T, F, Unknown}",
                                                                         "ProntoQA": "{T, F}"}
    assert run.depths.values.tolist() == [["FLD", 0, 2], ["FLD", 1, 2], ["ProntoQA", 5, 6]]
    assert run.example.depth == 3 and run.example.proof


def test_table1_puts_the_papers_sizes_beside_ours(run):
    table = page.table1(run)
    assert table.loc["FOLIO", "samples (paper)"] == 203 and table.loc["FOLIO", "samples (this run)"] == "not present"
    assert table.loc["FLD", "samples (this run)"] == 6 and table.loc["FLD", "labels (this run)"] == "{T, F, Unknown}"
    assert (page.n_loaded(run), page.n_present(run)) == (12, 2)
    assert page.label_counts(run).loc["ProntoQA"].tolist() == [3, 3, 0]


def test_the_run_writes_and_reads_back_its_tables(run, tmp_path):
    run.write(tmp_path)
    back = datasets.DatasetsRun.read(tmp_path)
    assert page.table1(back).equals(page.table1(run))
    assert back.provenance.family == "datasets" and back.provenance.n == 12


def test_the_datasets_run_uses_no_model():
    with pytest.raises(ValueError, match="uses no model"):
        datasets.run("smoke", backends={"embedded": object()})
