"""Every notebook runs in the smoke profile through papermill, and the book builds strictly, offline."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from finelogic.book.runner import NOTEBOOKS

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def test_every_notebook_family_exists_with_profile_and_seed_parameters():
    for name in NOTEBOOKS:
        nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, name
        assert re.search(r'^profile = "tiny"', tagged[0].source, re.M), name
        assert re.search(r"^seed = 0", tagged[0].source, re.M), name


def test_book_has_a_page_per_family_with_a_table_a_figure_and_one_provenance_box(built_book):
    html_dir = built_book / "_build" / "html"
    assert (html_dir / "index.html").exists()
    for name in NOTEBOOKS:
        page = (html_dir / "book" / "generated" / f"{name}.html").read_text()
        assert "<table" in page and page.count("<tr") > 3, name
        assert "<img" in page, name
        assert page.count("finelogic-provenance") == 1, name
        box = page[page.index("finelogic-provenance"):]
        box = re.sub(r"<[^>]+>", "", box[:box.index("</div>", box.index("built"))])
        assert f"notebook: {name}.ipynb" in box and "profile: smoke" in box and "commit: " in box, name
        assert "Made by notebook" not in page, name  # captions no longer repeat what the box says


def test_no_table_of_any_page_shows_nan(built_book):
    html_dir = built_book / "_build" / "html"
    for page in sorted(html_dir.rglob("*.html")):
        for table in re.findall(r"<table.*?</table>", page.read_text(), flags=re.S):
            text = re.sub(r"<[^>]+>", " ", table)
            assert not re.search(r"\bnan\b", text, flags=re.I), (page.name, text[:300])


def test_executed_notebooks_record_the_smoke_profile(built_book):
    for name in NOTEBOOKS:
        nb = nbformat.read(built_book / "book" / "generated" / f"{name}.ipynb", as_version=4)
        injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert 'profile = "smoke"' in injected[0].source, name


def test_landing_and_reproduce_pages_are_built(built_book):
    html_dir = built_book / "_build" / "html" / "book"
    assert "What this book regenerates" in (html_dir / "index.html").read_text()
    assert "How to reproduce" in (html_dir / "reproduce.html").read_text()
    assert "finelogic run --profile" in re.sub(r"<[^>]+>", "", (html_dir / "reproduce.html").read_text())


def test_no_secret_from_the_environment_reaches_any_page_or_notebook(built_book):
    from conftest import FAKE_API_KEY

    leaked = [p for p in built_book.rglob("*") if p.is_file() and FAKE_API_KEY.encode() in p.read_bytes()]
    assert leaked == []


def test_accuracy_depth_and_soundness_pages_run_under_the_released_policies(tmp_path, monkeypatch):
    """The pages in the smoke profile with the released prompt layout and the released soundness policy."""
    import json

    from finelogic.book.runner import run_notebooks
    from finelogic.runs.accuracy import AccuracyRun

    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path / "results"))
    released = {"prompt_layout": "released", "policy": "released"}
    # The checkpoints accuracy evaluates: one style (under the CoT prompt) and LogiPT (under Direct) show the
    # layout reach the fine-tuned rows; the book build trains and evaluates every style.
    run_notebooks("smoke", ["06_supervision"], output_dir=tmp_path / "out", parameters={"styles": ["NL"]})
    run_notebooks("smoke", ["02_accuracy", "03_depth", "04_soundness"], output_dir=tmp_path / "out",
                  parameters=released, force=True)
    accuracy = AccuracyRun.read(tmp_path / "results" / "smoke" / "accuracy")
    assert accuracy.prompt_layout == "released"
    assert set(accuracy.records["setting"]) == {"Direct", "CoT", "SFT-NL", "LogiPT"}
    assert set(accuracy.records["layout"]) == {"released"}
    soundness = json.loads((tmp_path / "results" / "smoke" / "soundness" / "run.json").read_text())
    assert soundness["provenance"]["settings"]["policy"] == "released"
    page = nbformat.read(tmp_path / "out" / "04_soundness.ipynb", as_version=4)
    shown = "".join(str(o.get("data", {})) for c in page.cells for o in c.get("outputs", []))
    assert "counted and judged as the released" in shown  # the released policy's note, not the principled one's
