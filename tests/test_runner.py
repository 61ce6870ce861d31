"""The papermill runner: parameters reach notebooks, failures name notebook and cell, unchanged runs skip."""
from __future__ import annotations

import json
import os

import nbformat
import pytest

from finelogic.book.runner import NotebookFailed, run_notebooks
from finelogic.profiles import PROFILE_NAMES, get_profile


def _notebook(path, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "tiny"\nseed = 0')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_unknown_profile_is_rejected_with_the_valid_names():
    with pytest.raises(ValueError, match="smoke, tiny, study, paper"):
        get_profile("huge")
    assert PROFILE_NAMES == ("smoke", "tiny", "study", "paper")


@pytest.mark.slow
def test_failing_notebook_is_named_with_its_cell_and_error(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _notebook(src / "bad.ipynb", "x = 1 / 0")
    with pytest.raises(NotebookFailed) as info:
        run_notebooks("smoke", ["bad"], source_dir=src, output_dir=tmp_path / "out")
    message = str(info.value)
    assert "notebook bad" in message
    assert "cell 2 ('x = 1 / 0')" in message  # cell 1 is the injected parameters cell
    assert "ZeroDivisionError" in message


@pytest.mark.slow
def test_parameters_reach_the_notebook_and_unchanged_runs_are_skipped(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _notebook(src / "echo.ipynb", "print(f'{profile}-{seed}')")
    first = run_notebooks("smoke", ["echo"], seed=7, source_dir=src, output_dir=out)
    executed = nbformat.read(out / "echo.ipynb", as_version=4)
    assert executed.cells[-1].outputs[0]["text"].strip() == "smoke-7"
    assert [r.skipped for r in first] == [False]

    again = run_notebooks("smoke", ["echo"], seed=7, source_dir=src, output_dir=out)
    assert [r.skipped for r in again] == [True]
    other_seed = run_notebooks("smoke", ["echo"], seed=8, source_dir=src, output_dir=out)
    assert [r.skipped for r in other_seed] == [False]
    forced = run_notebooks("smoke", ["echo"], seed=8, source_dir=src, output_dir=out, force=True)
    assert [r.skipped for r in forced] == [False]
    assert (out / "timings.json").exists()


def test_missing_notebook_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        run_notebooks("smoke", ["nope"], source_dir=tmp_path, output_dir=tmp_path / "out")


def test_the_run_key_covers_data_files_environment_and_upstream_results(tmp_path, monkeypatch):
    from finelogic.book.runner import run_key

    notebook = tmp_path / "nb.ipynb"
    _notebook(notebook, "x = 1")
    monkeypatch.delenv("FINELOGIC_DATA_DIR", raising=False)
    without_data = run_key(notebook, {"profile": "tiny"})
    data = tmp_path / "data"
    (data / "folio").mkdir(parents=True)
    (data / "folio" / "folio-validation.jsonl").write_text('{"a": 1}\n')
    monkeypatch.setenv("FINELOGIC_DATA_DIR", str(data))
    with_data = run_key(notebook, {"profile": "tiny"})
    (data / "folio" / "folio-validation.jsonl").write_text('{"a": 2}\n')  # same size, other content
    changed_data = run_key(notebook, {"profile": "tiny"})
    assert len({without_data, with_data, changed_data}) == 3
    upstream = tmp_path / "results" / "accuracy"
    before = run_key(notebook, {"profile": "tiny"}, [upstream])
    upstream.mkdir(parents=True)
    (upstream / "records.csv").write_text("id\nfld-1\n")
    after = run_key(notebook, {"profile": "tiny"}, [upstream])
    assert before != after and after == run_key(notebook, {"profile": "tiny"}, [upstream])


def test_profile_and_seed_cannot_be_passed_as_notebook_parameters(capsys):
    from finelogic.book.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--profile", "smoke", "-p", "profile=paper"])
    assert "set profile with --profile" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--profile", "smoke", "-y", "{seed: 3, models: [embedded]}"])
    assert "set seed with --seed" in capsys.readouterr().err


def test_yaml_parameters_must_be_a_mapping_of_names(capsys):
    from finelogic.book.cli import main

    with pytest.raises(SystemExit):
        main(["run", "-y", "[embedded]"])
    assert "expected a YAML mapping of parameter names" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "-y", "models: [embedded"])
    assert "not YAML" in capsys.readouterr().err


@pytest.mark.slow
def test_the_rerun_box_shows_the_time_the_runner_measured_for_this_build(tmp_path):


    from finelogic.book.provenance import RERUN_TAG, rerun_text

    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _notebook(src / "page.ipynb", "from finelogic.book.provenance import rerun_box\nrerun_box('page', profile)")
    nb = nbformat.read(src / "page.ipynb", as_version=4)
    nb.cells[-1].metadata["tags"] = [RERUN_TAG]
    nbformat.write(nb, src / "page.ipynb")
    # Before any build the box says so; it is never a number typed by hand.
    assert "not measured yet at profile `smoke`" in rerun_text("page", "smoke", timings={})
    assert "**8 min 0 s** at profile `paper`" in rerun_text("page", "paper", timings={"page": {"profile": "paper", "seconds": 480.2}})

    run_notebooks("smoke", ["page"], source_dir=src, output_dir=out)
    seconds = json.loads((out / "timings.json").read_text())["page"]["seconds"]
    executed = nbformat.read(out / "page.ipynb", as_version=4)
    shown = executed.cells[-1].outputs[0]["data"]["text/markdown"]
    # One parameters cell on the page, behind a toggle: the values this run used, not the defaults.
    tags = [set(cell.metadata.get("tags", [])) for cell in executed.cells]
    assert {"parameters", "remove-cell"} <= tags[0] and {"injected-parameters", "hide-input"} <= tags[1]
    assert "finelogic run --profile smoke --notebook page" in shown
    assert f"**{seconds:.1f} s** at profile `smoke`, measured by the runner when this page was built" in shown


def test_the_timings_table_lists_each_notebook_in_reading_order_with_load_and_total():
    from finelogic.book.runner import timings_table

    table = timings_table({
        "07_logicmark": {"profile": "tiny", "seconds": 90.0, "finished": "2026-12-01 11:00", "load": 1.25, "jobs": 1},
        "02_accuracy": {"profile": "tiny", "seconds": 30.5},  # written by an older runner: no load recorded
    })
    rows = table.splitlines()
    assert rows[2] == "| 02_accuracy | `tiny` | 30.5 | 1 | not recorded | not recorded |"
    assert rows[3] == "| 07_logicmark | `tiny` | 90.0 | 1 | 2026-12-01 11:00 | 1.25 |"
    assert rows[4] == "| **sum of the notebooks' times** | `tiny` | **120.5** (2.0 min) | | | |"


def test_a_run_records_when_it_finished_and_the_load_then(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _notebook(src / "page.ipynb", "x = 1")
    run_notebooks("smoke", ["page"], source_dir=src, output_dir=out)
    entry = json.loads((out / "timings.json").read_text())["page"]
    assert entry["load"] >= 0 and entry["finished"].startswith("20")
    assert "| page | `smoke` |" in (out / "timings.md").read_text()


def _interval_notebook(path, name: str, body: str = "") -> None:
    """A notebook that records when it ran (start, end) in ``{name}.json`` beside the results."""
    _notebook(path, "import json, os, time\n"
                    "start = time.time()\n" + body +
                    "time.sleep(5)\n"  # long enough that two overlap even when a busy machine starts a kernel late
                    f"open(os.path.join(os.environ['MARKS'], '{name}.json'), 'w').write("
                    "json.dumps([start, time.time(), os.environ.get('OMP_NUM_THREADS')]))")


@pytest.fixture
def marked(tmp_path, monkeypatch):
    """(notebook sources, outputs, marks): empty folders; ``$MARKS`` is where interval notebooks write."""
    src, out, marks = tmp_path / "src", tmp_path / "out", tmp_path / "marks"
    for folder in (src, marks):
        folder.mkdir()
    monkeypatch.setenv("MARKS", str(marks))
    return src, out, marks


@pytest.mark.slow
def test_jobs_run_notebooks_at_once_but_a_reader_waits_for_the_results_it_reads(marked, monkeypatch):
    src, out, marks = marked
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    # 03_depth reads 02_accuracy's results (UPSTREAM); 05_probing reads nothing of theirs.
    for name in ("02_accuracy", "03_depth", "05_probing"):
        _interval_notebook(src / f"{name}.ipynb", name)
    records = run_notebooks("smoke", ["02_accuracy", "03_depth", "05_probing"], source_dir=src, output_dir=out,
                            jobs=2)
    assert [r.notebook for r in records] == ["02_accuracy", "03_depth", "05_probing"]
    assert all(not r.skipped and r.jobs == 2 for r in records)
    ran = {name: json.loads((marks / f"{name}.json").read_text()) for name in ("02_accuracy", "03_depth", "05_probing")}
    assert ran["03_depth"][0] >= ran["02_accuracy"][1]  # started after accuracy ended
    assert ran["05_probing"][0] < ran["02_accuracy"][1] and ran["02_accuracy"][0] < ran["05_probing"][1]  # overlapped
    assert {threads for _, _, threads in ran.values()} == {str(max(1, (os.cpu_count() or 1) // 2))}
    timings = json.loads((out / "timings.json").read_text())
    assert {timings[n]["jobs"] for n in ran} == {2}
    # Unchanged inputs: nothing runs again, in parallel mode too.
    again = run_notebooks("smoke", ["02_accuracy", "03_depth", "05_probing"], source_dir=src, output_dir=out, jobs=2)
    assert [r.skipped for r in again] == [True, True, True]


@pytest.mark.slow
def test_with_jobs_a_failure_is_named_and_the_notebooks_that_finished_keep_their_times(marked):
    src, out, marks = marked
    _interval_notebook(src / "05_probing.ipynb", "05_probing")
    _notebook(src / "02_accuracy.ipynb", "x = 1 / 0")
    with pytest.raises(NotebookFailed, match=r"notebook 02_accuracy in cell 2 .*ZeroDivisionError"):
        run_notebooks("smoke", ["02_accuracy", "05_probing"], source_dir=src, output_dir=out, jobs=2)
    assert list(json.loads((out / "timings.json").read_text())) == ["05_probing"]


def test_relative_paths_in_the_environment_mean_paths_from_where_the_command_was_typed(tmp_path, monkeypatch):
    """`FINELOGIC_DATA_DIR=data make book` from the folder that holds data/: the kernels run in the notebooks'
    folder, yet they find the data (they used to fail with 'no such folder')."""
    src, out, here = tmp_path / "src", tmp_path / "out", tmp_path / "here"
    src.mkdir()
    (here / "data").mkdir(parents=True)
    monkeypatch.chdir(here)
    monkeypatch.setenv("FINELOGIC_DATA_DIR", "data")
    _notebook(src / "where.ipynb", "import os, pathlib\nprint(pathlib.Path(os.environ['FINELOGIC_DATA_DIR']).is_dir())")
    run_notebooks("smoke", ["where"], source_dir=src, output_dir=out)
    executed = nbformat.read(out / "where.ipynb", as_version=4)
    assert executed.cells[-1].outputs[0]["text"].strip() == "True"


@pytest.mark.slow
def test_a_page_whose_results_were_damaged_or_deleted_runs_again_and_names_what_was_damaged(tmp_path, monkeypatch):
    """Its inputs unchanged, the page used to be kept while its results stayed damaged, and the pages reading
    them said to run it, which changed nothing without --force."""
    from finelogic.config import results_dir
    from finelogic.runs.datasets import DatasetsRun

    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("FINELOGIC_DATA_DIR", raising=False)
    out, folder = tmp_path / "out", results_dir("smoke") / "datasets"
    assert [r.skipped for r in run_notebooks("smoke", ["01_datasets"], output_dir=out)] == [False]
    table = sorted(folder.glob("*.csv"))[0]
    table.write_text(table.read_text().replace("\n", "\n\n", 1))  # a blank line: the same rows, other bytes
    (again,) = run_notebooks("smoke", ["01_datasets"], output_dir=out)
    assert not again.skipped
    assert again.damaged.startswith(f"{table}: its content is not what {folder / 'run.json'} recorded")
    DatasetsRun.read(folder)  # whole again
    (kept,) = run_notebooks("smoke", ["01_datasets"], output_dir=out)
    assert kept.skipped and kept.damaged is None
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    (deleted,) = run_notebooks("smoke", ["01_datasets"], output_dir=out)
    assert not deleted.skipped and deleted.damaged == f"{folder}: missing (no run.json)"
    assert (folder / "run.json").is_file()
