"""Model outputs reach pages as text: markup in a response is escaped, never executed."""
from finelogic.book.display import model_output


def test_script_and_tags_in_a_response_are_shown_as_text():
    shown = model_output('<script>alert("x")</script><b>bold</b> & more', title="<i>t</i>")._repr_html_()
    assert "<script>" not in shown and "<b>" not in shown and "<i>" not in shown
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp; more" in shown
    assert "&lt;i&gt;t&lt;/i&gt;" in shown


def test_an_empty_response_is_labelled_rather_than_blank():
    assert "(empty response)" in model_output("")._repr_html_()


def test_a_built_page_shows_a_hostile_response_as_text(tmp_path):
    """End to end: executed notebook -> jupyter-book page, with the same configuration as the book."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import nbformat
    import pytest

    pytest.importorskip("myst_nb")
    repo = Path(__file__).resolve().parents[1]
    shutil.copy(repo / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copy(repo / "book" / "references.bib", tmp_path / "book" / "references.bib")  # named by _config.yml
    shutil.copytree(repo / "book" / "_static", tmp_path / "book" / "_static")  # named by _config.yml
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Escaping"),
                nbformat.v4.new_code_cell("from finelogic.book.display import model_output\n"
                                          "model_output('<script>window.PWNED=1</script><img src=x onerror=alert(1)>')"),
                nbformat.v4.new_code_cell("from IPython.display import Markdown\n"
                                          "from finelogic.book.provenance import caption\n"
                                          "Markdown(caption('nb', 'tiny', 0, model='x`<img src=y onerror=alert(2)>'))"),
                nbformat.v4.new_code_cell("import pandas as pd\n"
                                          "from finelogic.book import figures\n"
                                          "figures.show(figures.accuracy_by_group(pd.DataFrame([[0.0, 0.0]], "
                                          "columns=['a', 'b'], index=['m']), title='Zero run'))")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    import papermill

    papermill.execute_notebook(nb, str(tmp_path / "page.ipynb"), kernel_name="python3", progress_bar=False)
    result = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(tmp_path), "-W", "-n",
                             "--keep-going"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    page = (tmp_path / "_build" / "html" / "page.html").read_text()
    assert "window.PWNED" in page and "<script>window.PWNED" not in page and "<img src=x" not in page
    assert "&lt;script&gt;window.PWNED=1&lt;/script&gt;" in page
    assert "<img src=y" not in page and "&lt;img src=y onerror=alert(2)&gt;" in page  # the caption's model name
    # A figure reaches the page as an image whose alt text says what it shows (not a hash file name).
    assert ('alt="Line chart: Zero run (ours are 0% everywhere). accuracy (%) by group (a, b). Solid lines, ours: m '
            '(ours are 0% everywhere)."') in page


def test_step_table_text_is_dark_on_its_light_rows_in_either_theme():
    import re

    import pandas as pd

    from finelogic.book.step_view import TEXT, step_view_html

    steps = pd.DataFrame([dict(step=0, raw="fact1 -> int1: a", valid=True, atomic=True, relevant=True, reason="ok"),
                          dict(step=1, raw="int1 -> hypothesis", valid=False, atomic=True, relevant=True, reason="no")])
    shown = step_view_html(steps)
    # Every element holding text sets its own colour: the dark theme's light text never lands on a light row.
    for tag in ("tr", "td", "th", "code", "span"):
        styles = re.findall(rf"<{tag}\b[^>]*>", shown)
        assert styles and all(f"color:{TEXT}" in s or (tag == "th" and TEXT in s) for s in styles), tag
    assert "background:#dff3d8" in shown and "background:#f8d4d4" in shown


def test_side_by_side_escapes_every_column():
    from finelogic.book.display import side_by_side

    page = side_by_side({"NL": "<b>bold</b>", "Symb-Direct": "{A}{a} -> {B}{a}"}).data
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold" not in page
    assert "{A}{a} -&gt; {B}{a}" in page and page.count("<pre") == 2


def test_caption_values_are_code_spans_nothing_can_break_out_of():
    from finelogic.book.provenance import caption, code

    assert code("Llama-3.1") == "`Llama-3.1`"
    assert code("a`b") == "``a`b``" and code("`x`") == "`` `x` ``" and code("two\nlines") == "`two lines`"
    line = caption("02_accuracy.ipynb", "tiny", 0, model="x`<img src=y onerror=alert(2)>", n=3, settings="CoT")
    assert "model ``x`<img src=y onerror=alert(2)>``" in line and "settings = `CoT`" in line


def test_control_tokens_never_reach_a_page():
    from finelogic.book.display import model_output, without_control_tokens

    assert without_control_tokens("<|im_start|>user\nIs it red?<|im_end|>") == "user\nIs it red?"
    assert without_control_tokens("a <b> c <|endoftext|>") == "a <b> c "
    assert "im_end" not in model_output("__PROVED__<|im_end|>").data
