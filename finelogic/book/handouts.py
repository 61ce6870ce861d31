"""Teaching handouts: each executed teaching chapter as standalone HTML (nbconvert) and PDF (headless
Chromium), a student version without the cells tagged ``solution`` and an instructor version with them.

    python -m finelogic.book.handouts [OUTPUT_DIR]    # default: book/generated (writes OUTPUT_DIR/handouts/)
"""
from __future__ import annotations

import ast
import copy
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping

import nbformat

from finelogic.book.provenance import BUILT_ITEM, TIME_ITEM
from finelogic.config import book_output_dir

log = logging.getLogger(__name__)

#: The teaching chapters (file stems): the ones that get handouts.
TEACHING = ("t1_deduction", "t2_step_soundness", "t3_probing", "t4_loglikelihood")
SOLUTION_TAG = "solution"
VERSIONS = ("student", "instructor")

_GLUE_ROLE = re.compile(r"\{glue(?::text|:md|:any)?\}`([^`]+)`")
_ROLE = re.compile(r"\{[a-z][\w:-]*\}`([^`]*)`")
_DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{([\w:-]+)\}\s*(.*)$")


#: Debian's Chromium, started headless to print the handouts (the same flags as the browser test).
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 "--no-pdf-header-footer", "--host-resolver-rules=MAP * ~NOTFOUND")
#: Seconds one PDF may take.
PRINT_TIMEOUT = 180

#: The printed page's right margin (mm), as in :data:`PRINT_CSS`'s ``@page``.
RIGHT_MARGIN_MM = 12

#: Print CSS of every HTML handout: A4, long lines wrap, figures and tables within the page width, no page
#: break inside a figure, code block, table row or code cell with its output.
PRINT_CSS = """
@page { size: A4; margin: 14mm 12mm 16mm 12mm; }  /* RIGHT_MARGIN_MM = 12 */
@media print {
  html, body { margin: 0 !important; padding: 0 !important; background: white !important; }
  body, .jp-Notebook { width: auto !important; max-width: 100% !important; }
  .jp-Notebook { padding: 0 !important; }
  .jp-Cell { padding: 2px 0 !important; margin: 0 !important; }
  .jp-InputPrompt, .jp-OutputPrompt, .jp-Collapser { display: none !important; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  pre, code, .jp-RenderedText pre, .highlight pre, .jp-InputArea-editor {
    white-space: pre-wrap !important; overflow-wrap: anywhere !important; word-break: break-word;
    overflow: visible !important; max-width: 100% !important;
  }
  .jp-OutputArea-output, .jp-RenderedHTMLCommon, .finelogic-figure-box, .jp-InputArea-editor, .fl-table {
    overflow: visible !important; max-width: 100% !important;
  }
  img, svg, canvas {
    max-width: 100% !important; min-width: 0 !important; height: auto !important;
    max-height: 245mm !important; object-fit: contain;
  }
  img, svg, pre, .finelogic-figure-box, .jp-InputArea, .jp-RenderedImage, blockquote,
  .jp-CodeCell:has(.jp-InputArea) {
    break-inside: avoid; page-break-inside: avoid;
  }
  table { max-width: 100% !important; table-layout: auto !important; font-size: 9pt !important; }
  table.finelogic-wide-table { font-size: 8pt !important; }
  table.finelogic-wide-table th, table.finelogic-wide-table td { overflow-wrap: anywhere !important; }
  tr { break-inside: avoid; page-break-inside: avoid; }
  thead { display: table-header-group; }
  h1, h2, h3, h4, h5 { break-after: avoid; page-break-after: avoid; }
}
/* A table cell breaks a word only where the table cannot fit otherwise (PRINT_SCRIPT). */
th, td { overflow-wrap: break-word !important; word-break: normal !important; }
"""

#: Before printing, a table whose min-content width at 9 pt is wider than the printed column (186 mm) is
#: marked ``finelogic-wide-table``: its cells may break words anywhere (8 pt) rather than run off the page.
PRINT_SCRIPT = """
window.addEventListener('beforeprint', () => {
  const column = 186 * 96 / 25.4;
  document.querySelectorAll('table').forEach(table => {
    const saved = table.style.cssText;
    table.style.fontSize = '9pt';
    table.style.width = 'min-content';
    table.style.maxWidth = 'none';
    table.style.tableLayout = 'auto';
    const wide = table.getBoundingClientRect().width > column - 8;
    table.style.cssText = saved;
    if (wide) table.classList.add('finelogic-wide-table');
  });
});
"""


def handout_path(output_dir: Path, name: str, version: str) -> Path:
    """Where a chapter's handout goes: ``<output_dir>/handouts/<name>-<version>.html``."""
    return Path(output_dir) / "handouts" / f"{name}-{version}.html"


def pdf_path(html: Path) -> Path:
    """Where the PDF of the HTML handout ``html`` goes: beside it, ``<name>-<version>.pdf``."""
    return Path(html).with_suffix(".pdf")


def find_chromium() -> str | None:
    """Debian's ``chromium`` (on ``PATH`` or ``/usr/bin/chromium``), or None."""
    return shutil.which("chromium") or ("/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None)


def print_pdf(html: Path, pdf: Path, chromium: str) -> Path:
    """Print the HTML file ``html`` to ``pdf`` with headless ``chromium`` (a fresh profile, no network);
    RuntimeError with Chromium's last output when it fails, times out or writes no PDF."""
    pdf = Path(pdf)
    pdf.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="finelogic-chromium-") as profile:
        command = [chromium, *CHROMIUM_ARGS, f"--user-data-dir={profile}", f"--print-to-pdf={pdf.resolve()}",
                   Path(html).resolve().as_uri()]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=PRINT_TIMEOUT,
                                    env={**os.environ, "HOME": profile})
        except subprocess.TimeoutExpired as error:
            raise RuntimeError(f"chromium took over {PRINT_TIMEOUT:g} s to print {html}") from error
    if result.returncode != 0 or not pdf.exists() or not pdf.read_bytes()[:5] == b"%PDF-":
        raise RuntimeError(f"chromium could not print {html} (exit {result.returncode}): "
                           f"{(result.stderr or result.stdout)[-1500:]}")
    return pdf


def write_placeholder_pdf(pdf: Path, html: Path) -> Path:
    """A one-page PDF at ``pdf`` saying that the handout was not printed here and how to get it."""
    from matplotlib.figure import Figure

    text = (f"This PDF handout was not printed: Chromium was not installed\nwhere the book was built.\n\n"
            f"Use the HTML handout ({Path(html).name}) and print it from\nyour browser, or install Debian's "
            f"chromium (apt-get install chromium)\nand run `make html` again.")
    fig = Figure(figsize=(8.27, 11.69))
    fig.text(0.1, 0.9, text, va="top", ha="left", fontsize=13, linespacing=1.5)
    pdf.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(pdf, format="pdf", metadata={"Title": f"{Path(html).stem} (not printed)", "CreationDate": None})
    return pdf


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
    """MyST Markdown as plain Markdown nbconvert renders: glue roles and directives -> their values,
    admonitions -> a bold title and their body, other roles -> their text."""
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


def handout_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The executed chapter as a handout before nbconvert: plain Markdown, glued outputs shown only in the text,
    no build time in the "Rerun this page" box."""
    nb = copy.deepcopy(nb)
    glue = glued_values(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = plain_markdown(cell.source, glue)
        if "outputs" in cell:  # glued values are shown where the text names them, not as outputs
            cell.outputs = [o for o in cell.outputs if "scrapbook" not in o.get("metadata", {})]
        for output in cell.get("outputs", []):
            if "text/markdown" in output.get("data", {}):
                output["data"]["text/markdown"] = _without_item(plain_markdown(output["data"]["text/markdown"],
                                                                               glue), TIME_ITEM)
    return nb


def _without_item(markdown: str, item: str) -> str:
    """``markdown`` without its list items that begin with ``item`` (e.g. :data:`TIME_ITEM`)."""
    return "\n".join(line for line in markdown.split("\n") if not line.lstrip().startswith(item))


def handouts_key(shown: nbformat.NotebookNode) -> str:
    """What a chapter's handouts are made from: the executed notebook as its handouts show it
    (:func:`handout_notebook`, less the execution counts, dates and build time a rerun changes), this module's
    code, and how the PDFs are made."""
    printer = "chromium" if find_chromium() else "note"
    content = [{"type": c.cell_type, "source": c.source, "tags": c.get("metadata", {}).get("tags", []),
                "outputs": [_without_build_date(o) for o in c.get("outputs", [])]} for c in shown.cells]
    digest = hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    digest.update(Path(__file__).read_bytes())
    digest.update(printer.encode())
    return digest.hexdigest()


def _without_build_date(output: Mapping) -> dict:
    kept = {k: v for k, v in output.items() if k != "execution_count"}
    markdown = kept.get("data", {}).get("text/markdown")
    if isinstance(markdown, str):
        kept["data"] = {**kept["data"], "text/markdown": _without_item(markdown, BUILT_ITEM)}
    return kept


def _key_path(output_dir: Path, name: str) -> Path:
    return Path(output_dir) / "handouts" / f".{name}.key"


def write_handouts(output_dir: Path, names: tuple[str, ...] = TEACHING) -> list[Path]:
    """Both handouts of every executed chapter in ``output_dir`` as standalone HTML and PDF in
    ``output_dir/handouts/``; chapters not executed are skipped, and a chapter whose
    :func:`handouts_key` is unchanged (``handouts/.<name>.key``) is kept. Returns the HTML paths."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    written, fresh, keys = [], [], {}
    for name in names:
        source = Path(output_dir) / f"{name}.ipynb"
        if not source.exists():
            log.info("%s not executed yet: no handouts", name)
            continue
        shown = handout_notebook(nbformat.read(source, as_version=4))
        keys[name] = handouts_key(shown)
        marker, files = _key_path(output_dir, name), [handout_path(output_dir, name, v) for v in VERSIONS]
        if (marker.is_file() and marker.read_text(encoding="utf-8").strip() == keys[name]
                and all(f.is_file() and pdf_path(f).is_file() for f in files)):
            log.info("%s unchanged since its handouts were made; kept", name)
            written.extend(files)
            continue
        marker.unlink(missing_ok=True)
        for version in VERSIONS:
            exporter = HTMLExporter(exclude_input_prompt=True, exclude_output_prompt=True)
            dropped = {"parameters", "injected-parameters"} | ({SOLUTION_TAG} if version == "student" else set())
            remove = TagRemovePreprocessor(remove_input_tags={"hide-input", "remove-input"}, remove_cell_tags=dropped,
                                           enabled=True)
            exporter.register_preprocessor(remove, enabled=True)
            title = f"{name} ({version} handout{', with solutions' if version == 'instructor' else ''})"
            shown.metadata["title"] = title
            body, _ = exporter.from_notebook_node(shown, resources={"metadata": {"name": title}})
            path = handout_path(output_dir, name, version)
            path.parent.mkdir(parents=True, exist_ok=True)
            # PRINT_CSS and PRINT_SCRIPT last in the head
            head = (f'<style type="text/css" id="finelogic-print">{PRINT_CSS}</style>\n'
                    f'<script id="finelogic-print-script">{PRINT_SCRIPT}</script>\n')
            path.write_text(body.replace("</head>", head + "</head>", 1) if "</head>" in body else head + body,
                            encoding="utf-8")
            written.append(path)
            fresh.append((name, path))
    chromium = find_chromium()
    if chromium is None and fresh:
        log.warning("chromium not found: %d PDF handouts not printed (apt-get install chromium); each "
                    "chapter's PDF link leads to a one-page note saying so", len(fresh))
    for _, path in fresh:
        if chromium is None:
            write_placeholder_pdf(pdf_path(path), path)
        else:
            print_pdf(path, pdf_path(path), chromium)
    for name in dict.fromkeys(name for name, _ in fresh):
        _key_path(output_dir, name).write_text(keys[name] + "\n", encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    output_dir = Path(argv[0]) if argv else book_output_dir()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for path in write_handouts(output_dir):
        print(path)
        print(pdf_path(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
