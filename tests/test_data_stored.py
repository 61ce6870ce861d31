"""Generated test sets kept on disk (finelogic.data.stored) and the first-fraction slice of evaluation_sets."""
from __future__ import annotations

import json

import pytest

from finelogic.data.generate import generate
from finelogic.data.stored import generate_stored, stored_path
from finelogic.data.suites import evaluation_sets

SMALL = {"fld": {"name": "fld_paper_test", "scale": 0.02}, "prontoqa_generated": {"n": 20, "hops": (5,)}}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    return tmp_path


def test_a_stored_set_equals_the_generated_one_and_is_read_back_from_its_file(cache):
    made = generate_stored("prontoqa", n=6, seed=3, hops=(5,))
    assert made == generate("prontoqa", n=6, seed=3, hops=(5,))
    path = stored_path("prontoqa", n=6, seed=3, hops=(5,))
    assert path.parent == cache / "datasets" and path.name.startswith("prontoqa-")
    lines = path.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [p.id for p in made]
    # The next call reads the file: a problem edited on disk comes back edited.
    first = json.loads(lines[0]) | {"hypothesis": "edited on disk"}
    path.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    assert generate_stored("prontoqa", n=6, seed=3, hops=(5,))[0].hypothesis == "edited on disk"


def test_every_argument_but_progress_names_its_own_file(cache):
    base = stored_path("fld", n=4, seed=0, depths=(3,))
    assert stored_path("fld", n=4, seed=0, depths=(3,), progress=False) == base
    assert len({base, stored_path("fld", n=5, seed=0, depths=(3,)), stored_path("fld", n=4, seed=1, depths=(3,)),
                stored_path("fld", n=4, seed=0, depths=(4,)), stored_path("prontoqa", n=4, seed=0)}) == 5


def test_an_unreadable_stored_file_is_generated_again(cache):
    path = stored_path("prontoqa", n=3, seed=0)
    path.parent.mkdir(parents=True)
    path.write_text("not json\n")
    assert generate_stored("prontoqa", n=3, seed=0) == generate("prontoqa", n=3, seed=0)
    assert len(path.read_text().splitlines()) == 3


def test_evaluation_sets_are_stored_once_and_first_fraction_keeps_each_sets_first_items(cache, tmp_path):
    full = evaluation_sets(SMALL, data_dir=tmp_path)
    assert len(list((cache / "datasets").glob("*.jsonl"))) == 2  # FLD and the ProntoQA stand-in
    sliced = evaluation_sets({**SMALL, "first_fraction": 0.1}, data_dir=tmp_path)
    sizes = {s.name: (len(s.problems), len(f.problems)) for s, f in zip(sliced, full)}
    assert sizes == {"fld": (6, 60), "folio": (0, 0), "multi_logieval": (0, 0), "prontoqa": (2, 20)}
    for s, f in zip(sliced, full):
        assert s.problems == f.problems[:len(s.problems)] and s.source == f.source
    with pytest.raises(ValueError, match="first_fraction"):
        evaluation_sets({**SMALL, "first_fraction": 0}, data_dir=tmp_path)
