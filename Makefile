# The two commands of the README.  Each sets up .venv from requirements.txt on first use (or when the
# requirements change), so a fresh machine needs nothing but Python 3.10+ and make.
#   make book   -> builds the HTML book into _build/html (profile: $EAGLEBOOK_PROFILE, default paper)
#   make test   -> runs the unit tests and every chapter (profile ci) with pytest, on every core
# Checks in a real browser (need Chromium + chromedriver, e.g. Debian's chromium and chromium-driver):
#   make check-html -> opens every page of an existing _build/html, screenshots in _build/screenshots
#   make check-lab  -> opens, runs and screenshots chapter 1 in JupyterLab
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings

.PHONY: book test setup lab check-html check-lab clean-cache clean
setup: $(STAMP)

# The kernel's display name is the chapters' ("Python 3"), so that saving a chapter in JupyterLab leaves the
# kernelspec in its header alone; matplotlib's font cache is built here, not as a warning in chapter 1.
$(STAMP): requirements.txt pyproject.toml .jupyter/lab/settings/overrides.json
	@echo "== setting up $(VENV) (first run: about a minute) =="
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt 2>&1 \
	  | { grep -v "is ignored: it is neither a file nor a directory" || true; }
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	$(BIN)/python -c "import matplotlib.pyplot" 2>/dev/null
	mkdir -p $(LAB_SETTINGS) && cp .jupyter/lab/settings/overrides.json $(LAB_SETTINGS)/overrides.json
	touch $(STAMP)

# The build generates chapter 4's regime pages itself (eaglebook._toolchain.variant_pages runs
# `python -m eaglebook.variants` first), so this is `jupyter-book build .` with warnings as errors.
# TQDM_DISABLE: no progress bars in the HTML; stderr (warnings) is shown there (_config.yml: stderr_output).
# EAGLEBOOK_FIGURE_AUDIT=raise: a figure that fails plotting.audit (legend over data, missing colour bar, ...) fails its chapter
book: $(STAMP)
	TQDM_DISABLE=1 EAGLEBOOK_FIGURE_AUDIT=raise $(BIN)/jupyter-book build . -W -n --keep-going
	@echo "== open _build/html/index.html =="

# -n auto --dist loadfile (pytest-xdist): one worker per core, each test file on one worker in order; the
# chapters run from two files (those that train, then the book build: tests/test_chapters.py; the solver
# chapters: tests/test_chapters_solver.py), the unit tests fill the other workers.
PYTEST_PARALLEL ?= -n auto --dist loadfile
test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

HTML ?= _build/html
check-html: $(STAMP)
	@test -f $(HTML)/index.html || { echo "check-html: no built book in $(HTML); run 'make book' first (quick: EAGLEBOOK_PROFILE=ci make book)" >&2; exit 2; }
	$(BIN)/python -m eaglebook._toolchain.check_html --html $(HTML) --screenshots _build/screenshots

check-lab: $(STAMP)
	$(BIN)/python -m eaglebook._toolchain.check_lab --chapter book/01_task.md --screenshots _build/screenshots

lab: $(STAMP)
	$(BIN)/jupyter lab book/

clean-cache:
	rm -rf .cache/eaglebook

clean:
	rm -rf _build
