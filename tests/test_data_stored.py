"""Generated test sets kept in the store (finelogic.data.stored) and the first-fraction slice of evaluation_sets."""
from __future__ import annotations

import hashlib
import json
import logging
import sqlite3

import pytest

from finelogic.data.generate import generate
from finelogic.data.stored import generate_stored, stored_key
from finelogic.data.suites import evaluation_sets

SMALL = {"fld": {"name": "fld_paper_test", "scale": 0.02}, "prontoqa_generated": {"n": 20, "hops": (5,)}}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    return tmp_path


def sql(cache, statement, params=()):
    """What ``sqlite3 $FINELOGIC_CACHE/store.sqlite <statement>`` does."""
    with sqlite3.connect(cache / "store.sqlite") as db:
        return db.execute(statement, params).fetchall()


def test_a_stored_set_equals_the_generated_one_and_is_read_back_from_the_store(cache):
    made = generate_stored("prontoqa", n=6, seed=3, hops=(5,))
    assert made == generate("prontoqa", n=6, seed=3, hops=(5,))
    key = stored_key("prontoqa", 6, 3, {"hops": (5,)})
    (text, count), = sql(cache, "SELECT problems, count FROM datasets WHERE key = ? AND name = 'prontoqa'", (key,))
    assert count == 6 and [json.loads(line)["id"] for line in text.splitlines()] == [p.id for p in made]
    # The next call reads the row: a problem changed there (with its sha256, as a deliberate edit) comes back.
    lines = text.splitlines()
    edited = "".join(line + "\n" for line in [json.dumps(json.loads(lines[0]) | {"hypothesis": "edited"})] + lines[1:])
    sql(cache, "UPDATE datasets SET problems = ?, sha256 = ? WHERE key = ?",
        (edited, hashlib.sha256(edited.encode()).hexdigest(), key))
    assert generate_stored("prontoqa", n=6, seed=3, hops=(5,))[0].hypothesis == "edited"


@pytest.mark.parametrize("damage", ["a label edited by hand", "cut short"])
def test_a_stored_set_edited_or_cut_in_the_store_is_named_and_generated_again(cache, caplog, damage):
    made = generate_stored("prontoqa", n=6, seed=3, hops=(5,))
    key = stored_key("prontoqa", 6, 3, {"hops": (5,)})
    (text,), = sql(cache, "SELECT problems FROM datasets WHERE key = ?", (key,))
    if damage == "cut short":
        text = text[:len(text) // 2]
    else:
        text = text.replace('"label": "PROVED"', '"label": "DISPROVED"', 1)
    sql(cache, "UPDATE datasets SET problems = ? WHERE key = ?", (text, key))
    with caplog.at_level(logging.WARNING):
        assert generate_stored("prontoqa", n=6, seed=3, hops=(5,)) == made
    assert f"datasets row {key} (prontoqa: its text is not the one stored" in caplog.text


def test_every_argument_but_progress_names_its_own_row(cache):
    base = stored_key("fld", 4, 0, {"depths": (3,)})
    assert stored_key("fld", 4, 0, {"depths": (3,), "progress": False}) == base
    assert len({base, stored_key("fld", 5, 0, {"depths": (3,)}), stored_key("fld", 4, 1, {"depths": (3,)}),
                stored_key("fld", 4, 0, {"depths": (4,)}), stored_key("prontoqa", 4, 0, {})}) == 5


def test_evaluation_sets_are_stored_once_and_first_fraction_keeps_each_sets_first_items(cache, tmp_path):
    full = evaluation_sets(SMALL)
    assert sorted(n for n, in sql(cache, "SELECT name FROM datasets")) == ["fld_paper_test", "prontoqa"]
    sliced = evaluation_sets({**SMALL, "first_fraction": 0.1})
    sizes = {s.name: (len(s.problems), len(f.problems)) for s, f in zip(sliced, full)}
    assert sizes == {"fld": (6, 60), "folio": (0, 0), "multi_logieval": (0, 0), "prontoqa": (2, 20)}
    for s, f in zip(sliced, full):
        assert s.problems == f.problems[:len(s.problems)] and s.source == f.source
    with pytest.raises(ValueError, match="first_fraction"):
        evaluation_sets({**SMALL, "first_fraction": 0})
