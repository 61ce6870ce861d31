"""Teaching handouts: each executed teaching chapter as two standalone HTML files made with nbconvert, a
student version without solutions and an instructor version with them.

Solutions are the cells tagged ``solution`` (the chapters' solution dropdowns and the solution code cells
of the coding exercises); the student version drops them with nbconvert's ``TagRemovePreprocessor``. Code
that only builds the page (cells tagged ``hide-input``) is shown by its output alone; exercise and check
cells keep their code, so a student sees what to fill in and how to check it. The chapters' MyST markup
(``{glue:text}`` values, admonitions, roles), which nbconvert does not know, is turned into plain Markdown
first (:func:`plain_markdown`).

    python -m finelogic.book.handouts [OUTPUT_DIR]    # default: book/generated (writes OUTPUT_DIR/handouts/)
"""
from __future__ import annotations

import ast
import copy
import logging
import re
import sys
from pathlib import Path
from typing import Mapping

import nbformat

log = logging.getLogger(__name__)

#: The teaching chapters (file stems): the ones that get handouts.
TEACHING = ("t1_deduction", "t2_step_soundness", "t3_probing", "t4_loglikelihood")
SOLUTION_TAG = "solution"
VERSIONS = ("student", "instructor")

_GLUE_ROLE = re.compile(r"\{glue(?::text|:md|:any)?\}`([^`]+)`")
_ROLE = re.compile(r"\{[a-z][\w:-]*\}`([^`]*)`")
_DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{([\w:-]+)\}\s*(.*)$")


def handout_path(output_dir: Path, name: str, version: str) -> Path:
    """Where a chapter's handout goes: ``<output_dir>/handouts/<name>-<version>.html``."""
    return Path(output_dir) / "handouts" / f"{name}-{version}.html"


def glued_values(nb: nbformat.NotebookNode) -> dict[str, dict[str, str]]:
    """Every value a notebook glued (``myst_nb.glue``): name -> ``{mime type: data}``, prefix removed."""
    values = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            scrap = output.get("metadata", {}).get("scrapbook")
            if scrap:
                prefix = scrap.get("mime_prefix", "")
                values[scrap["name"]] = {k[len(prefix):]: v for k, v in output.get("data", {}).items()}
    return values


def _as_text(data: Mapping[str, str]) -> str:
    plain = data.get("text/plain", "")
    try:  # glued strings arrive as their repr ('...')
        value = ast.literal_eval(plain)
        return value if isinstance(value, str) else plain
    except (ValueError, SyntaxError):
        return plain


def plain_markdown(text: str, glue: Mapping[str, Mapping[str, str]]) -> str:
    """MyST Markdown as plain Markdown that nbconvert renders: ``{glue:text}`x``` -> its value, a ``{glue}``
    directive -> the glued HTML, admonitions -> a bold title and their body, other roles -> their text."""
    out: list[str] = []
    fences: list[tuple[str, str]] = []  # open directives: (fence, kind)
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        opening = _DIRECTIVE.match(line.strip())
        if opening:
            fence, kind, argument = opening.groups()
            i += 1
            while i < len(lines) and lines[i].startswith(":") and not lines[i].startswith(fence[:3]):
                i += 1  # directive options (:class: dropdown)
            if kind == "glue":
                data = glue.get(argument.strip(), {})
                out.append(data.get("text/html") or data.get("text/markdown") or _as_text(data))
                while i < len(lines) and lines[i].strip() != fence:
                    i += 1
                i += 1
                continue
            title = argument.strip() or kind.replace("-", " ").capitalize()
            out.extend([f"**{_ROLE.sub(_role_text, title)}.**", ""])
            fences.append((fence, kind))
            continue
        if fences and line.strip() == fences[-1][0]:
            fences.pop()
            out.append("")
            i += 1
            continue
        line = _GLUE_ROLE.sub(lambda m: _as_text(glue.get(m.group(1), {"text/plain": repr(m.group(1))})), line)
        out.append(_ROLE.sub(_role_text, line))
        i += 1
    return "\n".join(out)


def _role_text(match: re.Match) -> str:
    content = match.group(1)
    titled = re.match(r"(.*?)\s*<[^>]+>$", content, re.S)  # {doc}`text <target>` -> text
    return titled.group(1) if titled else content


def handout_notebook(nb: nbformat.NotebookNode, version: str) -> nbformat.NotebookNode:
    """The executed chapter ``nb`` as the ``student`` or ``instructor`` handout (before nbconvert): plain
    Markdown everywhere, solution cells dropped from the student version."""
    if version not in VERSIONS:
        raise ValueError(f"unknown handout version {version!r}; choose one of {', '.join(VERSIONS)}")
    nb = copy.deepcopy(nb)
    glue = glued_values(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = plain_markdown(cell.source, glue)
        if "outputs" in cell:  # glued values are shown where the text names them, not as outputs
            cell.outputs = [o for o in cell.outputs if "scrapbook" not in o.get("metadata", {})]
        for output in cell.get("outputs", []):
            if "text/markdown" in output.get("data", {}):
                output["data"]["text/markdown"] = plain_markdown(output["data"]["text/markdown"], glue)
    return nb


def write_handouts(output_dir: Path, names: tuple[str, ...] = TEACHING) -> list[Path]:
    """Both handouts of every executed chapter in ``output_dir`` (``<name>.ipynb``), as standalone HTML
    (images embedded) in ``output_dir/handouts/``; chapters not executed yet are skipped. Returns the paths."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    written = []
    for name in names:
        source = Path(output_dir) / f"{name}.ipynb"
        if not source.exists():
            log.info("%s not executed yet: no handouts", name)
            continue
        executed = nbformat.read(source, as_version=4)
        for version in VERSIONS:
            exporter = HTMLExporter(exclude_input_prompt=True, exclude_output_prompt=True)
            dropped = {"parameters", "injected-parameters"} | ({SOLUTION_TAG} if version == "student" else set())
            remove = TagRemovePreprocessor(remove_input_tags={"hide-input", "remove-input"}, remove_cell_tags=dropped,
                                           enabled=True)
            exporter.register_preprocessor(remove, enabled=True)
            title = f"{name} ({version} handout{', with solutions' if version == 'instructor' else ''})"
            nb = handout_notebook(executed, version)
            nb.metadata["title"] = title
            body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
            path = handout_path(output_dir, name, version)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    from finelogic.config import book_output_dir

    argv = sys.argv[1:] if argv is None else argv
    output_dir = Path(argv[0]) if argv else book_output_dir()
    for path in write_handouts(output_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
