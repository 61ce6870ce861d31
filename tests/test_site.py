"""The built site as a reader's browser sees it: headless Chromium over 127.0.0.1, no network.

Needs Debian's chromium (`.ci/run` installs it) and the `playwright` Python package (driver only; never
`playwright install`). Screenshots of the landing page and one chapter go to `artifacts/`.
"""
from __future__ import annotations

import functools
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
