"""Test-wide settings: offline, headless, and caches that never touch the user's home directory."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# The benchmarks' helpers (the stand-in models, the llama.cpp server) are imported by name from their folder.
sys.path.insert(0, str(REPO / "benchmarks"))

# Set before any test imports transformers / datasets / matplotlib.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# No user's data folder: a test without data_dir runs on stand-ins (offline), one with it names its own folder.
os.environ.pop("FINELOGIC_DATA_DIR", None)
# The converted embedded model is cached per checkout, so the slow GGUF conversion happens once.
os.environ.setdefault("FINELOGIC_CACHE", str(REPO / ".cache" / "test"))
# Under pytest-xdist (`make test` runs two worker processes on two cores) each worker computes on one thread:
# more only spin against the other worker.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def shared_data() -> Path:
    """The real benchmark files beside the repository (never copied into it)."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"real data not present at {path}")
    return path


@pytest.fixture(autouse=True)
def _figures_closed():
    """Figures a test made are closed after it (pyplot keeps every figure until closed: a worker running
    many figure tests held over 20, with their memory)."""
    yield
    import sys

    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path_factory, monkeypatch):
    """Results written during tests go to a temporary folder, never into the checkout."""
    monkeypatch.setenv("FINELOGIC_RESULTS", str(tmp_path_factory.getbasetemp() / "results"))


# A fake key planted while the book is executed and built: no page or notebook may contain it.
FAKE_API_KEY = "sk-finelogic-test-PLANTED-0123456789abcdef"


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """A copy of the book sources, every notebook executed in the smoke profile, built into _build/html
    (strict: warnings are errors), with a fake API key in the environment the whole time.

    ``$FINELOGIC_BUILT_BOOK`` names a checkout whose book is already built (``make book``) to test instead
    (``$FINELOGIC_BUILT_PROFILE``: its profile, default tiny).
    Built once per test session: under pytest-xdist (``make test``) the workers share one build in the
    session's common temporary folder, the first to ask building it while the others wait."""
    if os.environ.get("FINELOGIC_BUILT_BOOK"):  # a book you built (`make book`), e.g. the tiny one
        return Path(os.environ["FINELOGIC_BUILT_BOOK"])
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder every worker's own one is in
    root = shared / "built-book"
    from finelogic.files import exclusive_lock

    with exclusive_lock(shared / "built-book.lock"):
        if not (root / ".built").is_file():
            _build_book(root)
            (root / ".built").touch()
    return root


def _build_book(root: Path) -> None:
    import shutil
    import subprocess
    import sys

    from finelogic.book.runner import NOTEBOOKS, run_notebooks
    from finelogic.config import environment

    if root.exists():  # a build that failed in another worker: start again
        shutil.rmtree(root)
    root.mkdir()
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "book", root / "book", ignore=shutil.ignore_patterns("generated", "_build"))
    # The smoke results go beside the build, not into the checkout; the pages read the committed study there.
    shutil.copytree(REPO / "results" / "study", root / "results" / "study")
    with environment(OPENAI_API_KEY=FAKE_API_KEY, DEEPSEEK_API_KEY=FAKE_API_KEY,
                     FINELOGIC_RESULTS=str(root / "results")):
        # One style is fine-tuned (LogiPT too, as smoke always does): the pages show every fine-tuned row the
        # same way, and each checkpoint costs the accuracy and probing pages about 25 s; the tiny book and
        # tests/test_sft_runs.py train every style.
        generated = root / "book" / "generated"
        run_notebooks("smoke", ["06_supervision"], output_dir=generated, force=True, parameters={"styles": ["NL"]})
        rest = [name for name in NOTEBOOKS if name != "06_supervision"]
        run_notebooks("smoke", rest, output_dir=generated, force=True, jobs=2)
        jupyter_book = Path(sys.executable).parent / "jupyter-book"
        result = subprocess.run([str(jupyter_book), "build", str(root), "-W", "-n", "--keep-going"],
                                capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def pytest_runtest_logfinish(nodeid, location):
    """With ``FINELOGIC_TEST_RSS_LOG`` set to a folder, each test process appends a line per test whose run
    raised the process's peak resident memory (test id, the new peak in MB), to find what drives the peak."""
    folder = os.environ.get("FINELOGIC_TEST_RSS_LOG")
    if not folder:
        return
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # kB on Linux
    last = getattr(pytest_runtest_logfinish, "peak", 0)
    if peak > last:
        pytest_runtest_logfinish.peak = peak
        with open(Path(folder) / f"rss-{os.getpid()}.log", "a", encoding="utf-8") as log:
            log.write(f"{peak}\t{peak - last}\t{nodeid}\n")


#: The test files that take minutes, run first: ``make test`` hands whole files to its two pytest-xdist workers in
#: collection order (``--no-loadscope-reorder``), so these start at once (test_book.py starts building the book)
#: and the many short files fill the end, where neither worker is left alone with a long one.
LONG_FILES = ("test_book.py", "test_evaluate.py", "test_sft_runs.py", "test_bench_trl_distributed.py",
              "test_base_models.py", "test_runs.py")


def pytest_collection_modifyitems(items):
    first = {name: rank for rank, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: first.get(item.path.name, len(LONG_FILES)))  # stable: the rest keep their order
