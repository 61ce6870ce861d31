"""The repository stands alone: everything the code, the book and the notebooks cite lives in it.

A user who clones the project has no ``../shared`` folder, no ``DESIGN.md`` and no ``reference/*.md``; what
those held is in the book's pages under "Using this book" (``book/design.md``, ``book/released-code.md``,
``book/data-formats.md``, ``book/methods.md``). Docstrings cite a page and, in quotes, a section of it:
``book/released-code.md`` ("Answer scoring") or (``book/released-code.md``, "Answer scoring"); the section is
a heading of the page or a MyST label on it. Only tests may read the team's data in ``../shared``.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# What a user gets: the package, the book's own pages, the notebooks, benchmarks, README and configuration.
TOP_FILES = ("README.md", "Makefile", "_config.yml", "_toc.yml", "pyproject.toml", "environment.yml", ".gitignore")
FOLDERS = ("finelogic", "book", "notebooks", "benchmarks", ".ci")
SKIPPED = {"__pycache__", "generated", "_build", ".ipynb_checkpoints"}

# Files that exist only beside the repository (the team's notes and data), however they are spelled.
OUTSIDE = re.compile(
    r"\.\./shared"
    r"|(?<![\w.-])shared/(?:data|seeds|reference)\b"
    r"|(?<![\w.-])seeds/"
    r"|\b(?:DESIGN|STYLE)\.md"
    r"|(?<![\w.-])reference/[\w.-]+\.md"
    r"|(?<!book/)(?<![\w/.-])(?:datasets|methods|official_code)\.md"
)
# ``book/<page>.md``, optionally followed by a quoted section: `` ("Section")`` or ``, "Section"``.
CITATION = re.compile(
    r"(?<![\w/.-])book/(?P<page>[\w-]+)\.md`{0,2}"
    r"(?:(?:,\s*|\s*\(\s*)(?:\"(?P<double>[^\"]+)\"|'(?P<single>[^']+)'))?"
)
LABEL = re.compile(r"^\((?P<label>[\w-]+)\)=\s*$")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


def scanned_files(root: Path) -> list[Path]:
    """Every text file outside ``tests/`` that a user of the repository reads or runs."""
    files = [root / name for name in TOP_FILES if (root / name).is_file()]
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and not SKIPPED & set(path.relative_to(root).parts):
                files.append(path)
    texts = []
    for path in files:
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # images, fonts: nothing to cite in them
            continue
        texts.append(path)
    return texts


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def outside_references(root: Path) -> list[str]:
    """``path:line: text`` for every mention of a file that lives outside the repository."""
    found = []
    for path in scanned_files(root):
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(root)}:{_line(text, m.start())}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    return found


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[`*_]", "", text).split()).casefold()


def page_sections(page: Path) -> set[str]:
    """The MyST labels and the headings (outside code fences) of a book page, normalised."""
    sections, fence = set(), None
    for line in page.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        marker = re.match(r"^(`{3,}|~{3,}|:{3,})", stripped)
        if marker and (fence is None or marker.group(1)[0] == fence[0] and stripped == marker.group(1)):
            fence = marker.group(1) if fence is None else None
            continue
        if fence is not None:
            continue
        if label := LABEL.match(stripped):
            sections.add(_normal(label.group("label")))
        elif heading := HEADING.match(stripped):
            title = heading.group("title")
            # "Probing (Table 4)" may be cited as "Probing".
            sections |= {_normal(title), _normal(re.sub(r"\s*\([^()]*\)$", "", title))}
    return sections


def citations(root: Path) -> list[tuple[str, str, str | None]]:
    """``(where, page, section or None)`` for every ``book/<page>.md`` cited outside ``tests/``."""
    found = []
    for path in scanned_files(root):
        text = path.read_text(encoding="utf-8")
        for m in CITATION.finditer(text):
            section = m.group("double") or m.group("single")
            found.append((f"{path.relative_to(root)}:{_line(text, m.start())}", m.group("page"), section))
    return found


def broken_citations(root: Path) -> list[str]:
    """Citations whose page is not in ``book/`` or whose section is neither a heading nor a label of it."""
    broken = []
    for where, page, section in citations(root):
        target = root / "book" / f"{page}.md"
        if not target.is_file():
            broken.append(f"{where}: book/{page}.md does not exist")
        elif section is not None and _normal(section) not in page_sections(target):
            broken.append(f"{where}: book/{page}.md has no section {section!r}")
    return broken


# ------------------------------------------------------------------------------------------------ the repository


def test_nothing_outside_tests_refers_to_files_outside_the_repository():
    assert outside_references(REPO) == []


def test_every_cited_book_page_and_section_exists():
    assert broken_citations(REPO) == []


def test_the_code_cites_the_pages_that_replaced_the_notes():
    cited = {(page, section) for where, page, section in citations(REPO) if where.startswith("finelogic/")}
    pages = {page for page, _ in cited}
    assert {"design", "released-code", "data-formats", "methods"} <= pages
    assert ("released-code", "Answer scoring") in cited and ("released-code", "Probing") in cited


# ------------------------------------------------------------------------------------------------ planted cases


def _write(root: Path, relative: str, text: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text, encoding="utf-8")


PLANTED_PAGE = """(page-intro)=
# A page

## Answer scoring

```bash
# Not a heading
```

## Probing (Table 4)
"""
GOOD_DOCSTRING = '''"""Fine: ``book/page.md`` ("Answer scoring"), (``book/page.md``, "page-intro"),
(``book/page.md``, "Answer
    scoring"), ``book/methods.md``, ``book/page.md`` ("Probing"), and `book/page.md`."""
'''
BAD_DOCSTRING = '''"""See DESIGN.md and ``reference/official_code.md``; (reference: datasets.md).
Missing: ``book/nowhere.md`` ("Anything"); ``book/page.md`` ("Not a heading").
Unknown section: (``book/page.md``, "Probes")."""
'''


def test_the_checks_fail_on_planted_references_and_citations(tmp_path):
    _write(tmp_path, "book/page.md", PLANTED_PAGE)
    _write(tmp_path, "book/methods.md", "# Methods\n")
    _write(tmp_path, "finelogic/good.py", GOOD_DOCSTRING)
    _write(tmp_path, "finelogic/bad.py", BAD_DOCSTRING)
    _write(tmp_path, "book/rehearsal.md", "FINELOGIC_DATA_DIR=../shared/data make rehearse\n")
    _write(tmp_path, "notebooks/n.ipynb", '{"cells": [{"source": ["as in seeds/logicmark_card.txt"]}]}\n')
    _write(tmp_path, "tests/test_x.py", 'DATA = "../shared/data"  # tests may read the team data\n')

    assert outside_references(tmp_path) == [
        "finelogic/bad.py:1: DESIGN.md",
        "finelogic/bad.py:1: reference/official_code.md",
        "finelogic/bad.py:1: datasets.md",
        "book/rehearsal.md:1: ../shared",
        "notebooks/n.ipynb:1: seeds/",
    ]
    assert broken_citations(tmp_path) == [
        "finelogic/bad.py:2: book/nowhere.md does not exist",
        "finelogic/bad.py:2: book/page.md has no section 'Not a heading'",
        "finelogic/bad.py:3: book/page.md has no section 'Probes'",
    ]
