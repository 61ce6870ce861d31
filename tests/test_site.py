"""The built site as a reader's browser sees it: headless Chromium over 127.0.0.1, no network.

Needs Debian's chromium (`.ci/run` installs it) and the `playwright` Python package (driver only; never
`playwright install`). Screenshots of the landing page and one chapter go to `artifacts/`.
"""
from __future__ import annotations

import functools
import os
import re
import http.server
import shutil
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
pytestmark = [pytest.mark.slow, pytest.mark.browser]
#: The profile the tested book was built in: smoke (the session's own build) unless ``$FINELOGIC_BUILT_BOOK``
#: names a book you built, then ``$FINELOGIC_BUILT_PROFILE`` (default tiny, ``make book``'s).
BUILT_PROFILE = (os.environ.get("FINELOGIC_BUILT_PROFILE", "tiny") if os.environ.get("FINELOGIC_BUILT_BOOK")
                 else "smoke")


def toc_pages(root: Path) -> list[str]:
    """Every page of the table of contents, as paths relative to the site root (``book/x.html``)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages.extend(chapter["file"] for chapter in part["chapters"])
    return [f"{page}.html" for page in pages]


@pytest.fixture(scope="module")
def site(built_book):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    html = built_book / "_build" / "html"
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", html, toc_pages(built_book)
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def test_every_toc_page_loads_cleanly_offline(site, browser):
    base, html_dir, pages = site
    context = browser.new_context()
    # Anything that is not our own server counts as a failed request: the site must work offline.
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                  else route.abort())
    problems = []
    for page_path in pages:
        page = context.new_page()
        page.on("console", lambda m, p=page_path: problems.append(f"{p}: console {m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("requestfailed", lambda r, p=page_path: problems.append(f"{p}: failed request {r.url}"))
        page.on("response", lambda r, p=page_path: problems.append(f"{p}: HTTP {r.status} {r.url}")
                if r.status >= 400 else None)
        response = page.goto(base + page_path, wait_until="networkidle")
        assert response is not None and response.status == 200, page_path

        images = page.evaluate("Array.from(document.images).map(i => [i.src, i.naturalWidth, i.naturalHeight])")
        problems += [f"{page_path}: empty image {src}" for src, w, h in images if not (w and h)]
        if "/generated/" in page_path:
            assert images, f"{page_path}: a results page without a figure"
            rows = page.evaluate("document.querySelectorAll('article table tbody tr').length")
            assert rows > 0, f"{page_path}: a results page without table rows"
        # One missing-value mark (—) in every table: no NaN / nan reaches a reader.
        nan_cells = page.evaluate("Array.from(document.querySelectorAll('article table td, article table th'))"
                                  ".map(c => c.innerText.trim()).filter(t => /\\bnan\\b/i.test(t))")
        problems += [f"{page_path}: NaN in a table cell: {text!r}" for text in nan_cells]

        for href in page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"):
            url, _ = urldefrag(href)
            if url.startswith(base):
                target = html_dir / urlparse(url).path.lstrip("/")
                if target.is_dir():
                    target = target / "index.html"
                if not target.exists():
                    problems.append(f"{page_path}: broken internal link {href}")
        page.close()
    context.close()
    assert problems == []


def test_search_finds_a_chapter(site, browser):
    base, _, _ = site
    page = browser.new_page()
    page.goto(urljoin(base, "search.html?q=soundness"), wait_until="networkidle")
    page.wait_for_selector("#search-results li", timeout=15000)
    assert page.locator("#search-results li").count() > 0
    page.close()


def test_screenshots_of_landing_page_and_a_chapter(site, browser):
    base, _, pages = site
    out = REPO / "artifacts" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    for name, path in (("landing", pages[0]), ("chapter_depth", "book/generated/03_depth.html")):
        page.goto(base + path, wait_until="networkidle")
        target = out / f"{name}.png"
        page.screenshot(path=str(target), full_page=True)
        assert target.stat().st_size > 20_000, name
    page.close()


def _generated(pages: list[str]) -> list[str]:
    return [p for p in pages if "/generated/" in p]


def test_no_page_is_wider_than_a_phone(site, browser):
    """At a 420 px viewport nothing makes the page scroll sideways: wide tables and code scroll in their box."""
    base, _, pages = site
    page = browser.new_page(viewport={"width": 420, "height": 900})
    too_wide = {}
    for path in pages:
        page.goto(base + path, wait_until="load")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 420:
            too_wide[path] = width
    page.close()
    assert too_wide == {}


def test_one_search_box(site, browser):
    base, _, pages = site
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(base + pages[0], wait_until="load")
    visible = page.evaluate("Array.from(document.querySelectorAll('.search-button-field, input[type=search]'))"
                            ".filter(e => e.offsetParent !== null).length")
    page.close()
    assert visible == 1


def test_every_generated_page_has_one_provenance_box_and_a_rerun_box_with_a_measured_time(site, browser):
    base, _, pages = site
    page = browser.new_page()
    for path in _generated(pages):
        name = path.rsplit("/", 1)[-1].removesuffix(".html")
        page.goto(base + path, wait_until="load")
        page.evaluate(_OPEN_ALL)  # the boxes are in the folded "Rerun on this machine" section
        provenance = page.locator(".finelogic-provenance")
        assert provenance.count() == 1, path
        assert f"{name}.ipynb" in provenance.inner_text() and BUILT_PROFILE in provenance.inner_text(), path
        rerun = page.locator(".finelogic-rerun")
        assert rerun.count() == 1, path
        text = rerun.inner_text()
        assert f"finelogic run --profile {BUILT_PROFILE} --notebook {name}" in text, path
        # The built_book fixture runs every notebook through the runner, which measures each one.
        assert re.search(r"time: (\d+ min )?[\d.]+ s at profile " + BUILT_PROFILE + ", measured by the runner", text), (path, text)
        assert "Made by notebook" not in page.content(), path  # captions no longer repeat the provenance
    page.close()


def test_every_results_figure_has_alt_text_that_says_what_it_shows(site, browser):
    """Alt text is a sentence about the figure, not a file name or a hash."""
    base, _, pages = site
    page = browser.new_page()
    bad = []
    for path in [p for p in _generated(pages) if "/generated/0" in p]:
        page.goto(base + path, wait_until="load")
        for alt in page.evaluate("Array.from(document.querySelectorAll('article img')).map(i => i.alt || '')"):
            if (len(alt.split()) < 4 or re.fullmatch(r"[\w./-]+\.(png|jpe?g|svg)", alt.strip())
                    or re.search(r"\b[0-9a-f]{16,}\b", alt)):
                bad.append((path, alt))
    page.close()
    assert bad == []


def test_teaching_chapters_link_handouts_and_the_student_ones_hold_no_solutions(site, browser):
    base, html_dir, pages = site
    page = browser.new_page()
    for path in [p for p in _generated(pages) if "/generated/t" in p]:
        name = path.rsplit("/", 1)[-1].removesuffix(".html")
        page.goto(base + path, wait_until="load")
        assert page.locator("details.dropdown, .dropdown").count() >= 3, path  # the chapter's own solutions
        links = page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
        handouts = {}
        for version in ("student", "instructor"):
            found = [u for u in links if u.endswith(f"/{name}-{version}.html")]
            assert found, (path, version)
            handouts[version] = html_dir / urlparse(found[0]).path.lstrip("/")
        student = handouts["student"].read_text()
        instructor = handouts["instructor"].read_text()
        assert "Exercise 4 (code)" in student and "teaching.check_" in re.sub(r"<[^>]+>", "", student)
        assert "Solution." not in student and "Correct." not in student, name
        assert "Solution." in instructor and "Correct." in instructor, name
    page.close()


def test_teaching_chapters_link_pdf_handouts_that_print_the_whole_chapter_within_the_page(site, browser):
    """Each chapter links a student and an instructor PDF (printed by Chromium from the HTML handout): pages,
    the chapter's title in its text, no word beyond the page's right margin (poppler's pdftotext -bbox)."""
    from test_teaching import pdf_report

    if not shutil.which("pdftotext"):
        pytest.skip("poppler-utils is not installed (apt-get install poppler-utils)")
    base, html_dir, pages = site
    page = browser.new_page()
    checked = {}
    for path in [p for p in _generated(pages) if "/generated/t" in p]:
        name = path.rsplit("/", 1)[-1].removesuffix(".html")
        page.goto(base + path, wait_until="load")
        title = " ".join(page.locator("article h1").first.inner_text().replace("#", "").split())
        links = page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
        for version in ("student", "instructor"):
            found = [u for u in links if u.endswith(f"/{name}-{version}.pdf")]
            assert found, (path, version)
            report = pdf_report(html_dir / urlparse(found[0]).path.lstrip("/"))
            assert report["pages"] > 0, (name, version)
            assert title in report["text"], (name, version, title)
            assert report["beyond_margin"] == [], (name, version, report["beyond_margin"][:5])
            checked[f"{name}-{version}"] = report["pages"]
    page.close()
    assert len(checked) == 8, checked


def test_figure_text_stays_at_least_10_pt_on_a_phone(site, browser):
    """At a 420 px viewport every figure on every results page shows its smallest text at >= 10 pt: the
    rendered width of the image (as the browser lays it out) times the figure's smallest font over the width
    it was drawn for. Narrower than that, the figure scrolls sideways in its own box. The sizes measured go
    to artifacts/phone_text.json."""
    import math

    base, _, pages = site
    page = browser.new_page(viewport={"width": 420, "height": 900})
    measured, small = {}, []
    for path in _generated(pages):
        page.goto(base + path, wait_until="load")
        page.evaluate(_OPEN_ALL)  # figures in folded sections too, as a reader who opens them sees them
        figures = page.evaluate("""Array.from(document.querySelectorAll('article img')).map(i => ({
            alt: (i.alt || i.src).slice(0, 60), rendered: i.getBoundingClientRect().width,
            drawn: parseFloat(i.dataset.cssWidth), font: parseFloat(i.dataset.fontPt),
            boxScrolls: i.parentElement.scrollWidth > i.parentElement.clientWidth}))""")
        if not figures:  # a page without a figure (test_every_toc_page_loads_cleanly_offline names them)
            measured[path] = {"smallest_text_pt": None, "figures": [], "scroll_sideways": 0}
            continue
        sizes = []
        for fig in figures:
            made_here = all(isinstance(fig[k], (int, float)) and math.isfinite(fig[k]) and fig[k] > 0
                            for k in ("drawn", "font"))
            assert made_here, (path, "an image not made by figures.figure_html", fig["alt"])
            text_pt = fig["font"] * fig["rendered"] / fig["drawn"]
            sizes.append(round(text_pt, 2))
            if text_pt < 10 - 0.05:
                small.append((path, fig["alt"], round(text_pt, 2)))
        measured[path] = {"smallest_text_pt": min(sizes), "figures": sizes,
                          "scroll_sideways": sum(f["boxScrolls"] for f in figures)}
    page.close()
    _keep_measured("phone_text.json", measured)
    assert small == []
    assert any(m["figures"] for m in measured.values())


def _keep_measured(name: str, measured: dict) -> None:
    """Write what a test measured to ``artifacts/<name>`` and print it."""
    import json

    out = REPO / "artifacts"
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(measured, indent=1))
    print(json.dumps(measured, indent=1))


def _results_pages(pages: list[str]) -> list[str]:
    """The landing page and the results chapters (02 to 08), the pages a reader opens for the paper's results."""
    return [pages[0]] + [p for p in pages if re.search(r"/generated/0[2-8]_", p)]


_OPEN_ALL = "document.querySelectorAll('details').forEach(d => d.open = true)"
#: Every table wider than the article's text column (its content box), with both widths.
_WIDE_TABLES = """() => {
    const article = document.querySelector('article.bd-article');
    const style = getComputedStyle(article);
    const column = article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return Array.from(article.querySelectorAll('table')).map(t => ({
        width: Math.max(t.scrollWidth, t.getBoundingClientRect().width), column: column,
        head: (t.querySelector('tr') || t).innerText.replace(/\\s+/g, ' ').slice(0, 80)}))
      .filter(t => t.width > t.column + 1);
}"""


def test_tables_fit_the_text_column_and_scroll_in_their_own_box_on_a_phone(site, browser):
    """At 1280 px every table of a results page, folded sections opened, fits the text column (no column cut
    off at the right); at 420 px the page, folded sections opened, never scrolls sideways: a wide table scrolls
    inside its own box."""
    base, _, pages = site
    too_wide, page_scrolls = [], {}
    for width in (1280, 420):
        page = browser.new_page(viewport={"width": width, "height": 900})
        for path in _results_pages(pages):
            page.goto(base + path, wait_until="load")
            page.evaluate(_OPEN_ALL)
            if width == 1280:
                too_wide += [(path, round(t["width"]), round(t["column"]), t["head"])
                             for t in page.evaluate(_WIDE_TABLES)]
            else:
                scroll = page.evaluate("document.documentElement.scrollWidth")
                if scroll > width:
                    page_scrolls[path] = scroll
        page.close()
    assert too_wide == []
    assert page_scrolls == {}


#: Words a reader reads on a page: the article's rendered text (folded sections closed, so only their
#: summary line counts) less its tables and code.
_WORDS = """() => {
    const count = text => (text.match(/\\S+/g) || []).length;
    const article = document.querySelector('article.bd-article');
    let words = count(article.innerText);
    const skipped = Array.from(article.querySelectorAll('table, pre, div.highlight'))
        .filter(e => !e.parentElement.closest('table, pre, div.highlight'));
    for (const e of skipped) words -= count(e.innerText);
    return words;
}"""


def test_results_pages_are_short_with_this_builds_run_folded(site, browser):
    """At 1280x900 with the "Rerun on this machine" section folded, a results page is at most 10 screens long
    (the claims page 12) and has at most 2,500 words outside tables and code; the counts go to
    artifacts/page_lengths.json."""
    base, _, pages = site
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    measured, too_long = {}, []
    for path in _results_pages(pages):
        page.goto(base + path, wait_until="load")
        folded = page.evaluate("document.querySelectorAll('details.finelogic-rerun-run:not([open])').length")
        if path != pages[0]:
            assert folded == 1, (path, "one folded 'Rerun on this machine' section")
        screens = page.evaluate("document.documentElement.scrollHeight") / 900
        words = page.evaluate(_WORDS)
        measured[path] = {"screens": round(screens, 1), "words": words}
        limit = 12 if "08_claims" in path else 10
        if screens > limit or words > 2500:
            too_long.append((path, round(screens, 1), words))
    page.close()
    _keep_measured("page_lengths.json", measured)
    assert too_long == []


def test_no_long_paragraph_is_repeated_on_another_page(site, browser):
    """A paragraph of 40 or more words appears on one page only (folded sections included): what every page
    would repeat is said once and linked."""
    base, _, pages = site
    page = browser.new_page()
    seen: dict[str, list[str]] = {}
    for path in _results_pages(pages) + [p for p in pages if "/generated/0" in p and p not in _results_pages(pages)]:
        page.goto(base + path, wait_until="load")
        for text in page.evaluate("Array.from(document.querySelectorAll('article p'))"
                                  ".map(p => p.textContent.replace(/\\s+/g, ' ').trim())"):
            if len(text.split()) >= 40:
                seen.setdefault(text, [])
                if path not in seen[text]:
                    seen[text].append(path)
    page.close()
    repeated = {text[:100]: where for text, where in seen.items() if len(where) > 1}
    assert repeated == {}


def test_screenshots_of_the_results_pages_at_desktop_and_phone_width(site, browser):
    """Full-page screenshots of the landing page and chapters 02-04 and 06-08 at 1280 and 420 px, to look at
    (artifacts/screenshots/<page>-<width>.png)."""
    base, _, pages = site
    out = REPO / "artifacts" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    chosen = [pages[0]] + [p for p in pages if re.search(r"/generated/0[234678]_", p)]
    for width in (1280, 420):
        page = browser.new_page(viewport={"width": width, "height": 900})
        for path in chosen:
            page.goto(base + path, wait_until="networkidle")
            name = "landing" if path == pages[0] else path.rsplit("/", 1)[-1].removesuffix(".html")
            target = out / f"{name}-{width}.png"
            page.screenshot(path=str(target), full_page=True)
            assert target.stat().st_size > 20_000, target
        page.close()
