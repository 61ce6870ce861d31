"""A run reads back whole: what ``run.write()`` puts in its folder gives back an equal run (every table,
every kept field, the provenance), for every notebook family, and a folder whose files were changed after
the run wrote them is refused, naming the file."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from test_accuracy import SaysAndScores
from test_probing import ScriptedStates

from finelogic.runs import accuracy, datasets, depth, logicmark, probing, soundness
from finelogic.runs.results import BrokenRun, Run
from finelogic.runs.registry import FAMILIES


def same_run(a: Run, b: Run) -> bool:
    """True when ``a`` and ``b`` hold the same tables (values and column types), kept fields and provenance."""
    if type(a) is not type(b) or a.provenance.as_dict() != b.provenance.as_dict():
        return False
    for name, frame in a.tables().items():
        other = getattr(b, name)
        if not isinstance(other, pd.DataFrame) or not frame.reset_index(drop=True).equals(other.reset_index(drop=True)):
            return False
        if [str(t) for t in frame.dtypes] != [str(t) for t in other.dtypes]:
            return False
    return all(getattr(a, name) == getattr(b, name) for name in a.kept_fields())


class HashScores:
    """Log-likelihoods that are a fixed function of the text: enough for LogicMark's tables."""

    def loglikelihood(self, requests):
        out = []
        for context, continuation in requests:
            digest = int(hashlib.sha256((context + continuation).encode()).hexdigest()[:6], 16)
            out.append((-1.0 - digest / 2**24, max(1, len(continuation.split())), False))
        return out


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One smoke run of every family that needs no training, with handed-in models."""
    cache = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("FINELOGIC_CACHE", str(cache))
    try:
        runs = {}
        runs["datasets"] = datasets.run("smoke", seed=0)
        runs["accuracy"] = accuracy.run("smoke", seed=0, backends={"embedded": SaysAndScores("__PROVED__", "")},
                                        settings=["Direct", "CoT", "Sel-Inf"])
        runs["depth"] = depth.run("smoke", seed=0, accuracy_run=runs["accuracy"])
        runs["soundness"] = soundness.run("smoke", seed=0, accuracy_run=runs["accuracy"])
        runs["probing"] = probing.run("smoke", backends={probing.EMBEDDED: ScriptedStates(),
                                                         probing.RANDOM_INIT: ScriptedStates("random")})
        runs["logicmark"] = logicmark.run("smoke", backends={logicmark.EMBEDDED: HashScores()})
    finally:
        mp.undo()
    return runs


@pytest.mark.parametrize("family", ["datasets", "accuracy", "depth", "soundness", "probing", "logicmark"])
def test_a_written_run_reads_back_equal(made, family, tmp_path):
    run = made[family]
    entry = next(f for f in FAMILIES if f.name == family)
    run.write(tmp_path / family)
    back = entry.run_type.read(tmp_path / family)
    assert same_run(back, run)
    # what pages read beyond the tables came back too
    for name in run.kept_fields():
        assert getattr(back, name) == getattr(run, name), name
    # written again from what was read: the same bytes
    back.write(tmp_path / "again")
    for path in sorted((tmp_path / family).iterdir()):
        assert path.read_bytes() == (tmp_path / "again" / path.name).read_bytes(), path.name


def test_the_pages_inputs_survive_the_round_trip(made, tmp_path):
    made["logicmark"].write(tmp_path / "logicmark")
    back = logicmark.LogicMarkRun.read(tmp_path / "logicmark")
    assert len(back.problems) == 5 and back.problems == made["logicmark"].problems  # page 07 reads them
    made["accuracy"].write(tmp_path / "accuracy")
    back = accuracy.AccuracyRun.read(tmp_path / "accuracy")
    # Table 2's cells are written with the run, and its test sets with their problems
    pd.testing.assert_frame_equal(back.summary, made["accuracy"].summary)
    assert [len(s.problems) for s in back.eval_sets] == [len(s.problems) for s in made["accuracy"].eval_sets]


@pytest.mark.parametrize("damage", ["cut a row", "edit a cell", "delete a file", "swap in another run's file"])
def test_a_result_folder_changed_after_it_was_written_is_refused_naming_the_file(made, tmp_path, damage):
    run = made["accuracy"]
    run.write(tmp_path / "a")
    records = tmp_path / "a" / "records.csv"
    if damage == "cut a row":
        lines = records.read_text().splitlines(keepends=True)
        records.write_text("".join(lines[:-1]))
    elif damage == "edit a cell":
        frame = pd.read_csv(records)
        frame.loc[0, "correct"] = not bool(frame.loc[0, "correct"])
        frame.to_csv(records, index=False)
    elif damage == "delete a file":
        records.unlink()
    else:
        other = accuracy.run("smoke", seed=0, backends={"embedded": SaysAndScores("__DISPROVED__")},
                             settings=["Direct"])
        other.write(tmp_path / "b")
        records.write_bytes((tmp_path / "b" / "records.csv").read_bytes())
    with pytest.raises(BrokenRun, match=r"records\.csv"):
        accuracy.AccuracyRun.read(tmp_path / "a")


def test_a_rewrite_replaces_the_whole_set(made, tmp_path):
    made["accuracy"].write(tmp_path / "a")
    (tmp_path / "a" / "stray.csv").write_text("x\n1\n")
    made["accuracy"].write(tmp_path / "a")
    assert not (tmp_path / "a" / "stray.csv").exists()  # the old folder was replaced whole, not merged
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind
    meta = json.loads((tmp_path / "a" / "run.json").read_text())
    assert meta["files"]["records.csv"]["rows"] == len(made["accuracy"].records)


def test_two_runs_written_to_one_folder_at_once_never_read_back_mixed(made, tmp_path):
    import threading

    one = made["accuracy"]
    other = accuracy.run("smoke", seed=3, backends={"embedded": SaysAndScores("__DISPROVED__")},
                         settings=["Direct"])
    folder = tmp_path / "accuracy"
    one.write(folder)
    stop, seen, errors = threading.Event(), [], []

    def writer(run):
        for _ in range(15):
            run.write(folder)

    def reader():
        while not stop.is_set():
            try:
                back = accuracy.AccuracyRun.read(folder)
            except Exception as error:  # noqa: BLE001 - any failure is recorded and fails the test below
                errors.append(repr(error))
                return
            seen.append(back.provenance.seed)
            # the records are the seed's own: never one run's table beside the other's provenance
            if not back.records.equals((one if back.provenance.seed == 0 else other).records):
                errors.append(f"seed {back.provenance.seed}'s provenance with the other run's records")

    threads = [threading.Thread(target=writer, args=(r,)) for r in (one, other)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert errors == [] and set(seen) <= {0, 3} and len(seen) > 0
    final = accuracy.AccuracyRun.read(folder)
    assert same_run(final, one) or same_run(final, other)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_manifest_without_its_list_of_files_is_refused_naming_it(made, tmp_path, monkeypatch):
    """Without the files' SHA-256 nothing was checked: a records.csv cut to its Direct rows read back as
    a run, and the depth run made from it had Direct only."""
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path))
    folder = tmp_path / "smoke" / "accuracy"
    made["accuracy"].write(folder)
    meta = json.loads((folder / "run.json").read_text())
    del meta["files"]
    (folder / "run.json").write_text(json.dumps(meta))
    records = pd.read_csv(folder / "records.csv")
    records[records["setting"] != "CoT"].to_csv(folder / "records.csv", index=False)
    with pytest.raises(BrokenRun, match=rf"^{folder / 'run.json'}: lists no files with their SHA-256"):
        accuracy.AccuracyRun.read(folder)
    # the depth page, reading it as its upstream, names the file and the command that makes it again
    with pytest.raises(BrokenRun, match=rf"^{folder / 'run.json'}: .*make it with "
                                        r"`finelogic run --profile smoke --family accuracy`"):
        depth.run("smoke", seed=0, settings=["Direct", "CoT", "Sel-Inf"])


def test_a_manifest_that_does_not_list_every_table_is_refused_naming_the_table(made, tmp_path):
    made["accuracy"].write(tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "run.json").read_text())
    del meta["files"]["records.csv"]
    (tmp_path / "a" / "run.json").write_text(json.dumps(meta))
    with pytest.raises(BrokenRun, match=r"run\.json: does not list records\.csv among its files"):
        accuracy.AccuracyRun.read(tmp_path / "a")


@pytest.mark.parametrize("damage, fault", [
    ("cut in half", "it does not read as JSON"),
    ("replaced by []", "it needs a JSON object with its provenance, dtypes and files"),
    ("provenance of another kind", "its provenance does not read back"),
])
def test_a_damaged_run_json_is_refused_naming_it(made, tmp_path, damage, fault):
    made["accuracy"].write(tmp_path / "a")
    manifest = tmp_path / "a" / "run.json"
    text = manifest.read_text()
    if damage == "cut in half":
        manifest.write_text(text[:len(text) // 2])
    elif damage == "replaced by []":
        manifest.write_text("[]")
    else:
        meta = json.loads(text)
        meta["provenance"] = {"family": "accuracy"}  # no profile, no seed
        manifest.write_text(json.dumps(meta))
    with pytest.raises(BrokenRun) as raised:
        accuracy.AccuracyRun.read(tmp_path / "a")
    assert str(raised.value).startswith(f"{manifest}: ") and fault in str(raised.value)
    assert str(raised.value).endswith("; run the family again")
