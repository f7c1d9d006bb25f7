# The two commands of the README. Both install everything first (torch pinned to a CPU-capable
# build so a CPU-only machine never pulls CUDA wheels), then run.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
TORCH ?= torch==2.13.0

.PHONY: install demo test docs docs-check export

install:
	$(PIP) install --quiet --disable-pip-version-check "$(TORCH)"
	$(PIP) install --quiet --disable-pip-version-check -e ".[dev]"

## The main job on the embedded default: no download, no GPU.
demo: install
	disentlit demo --out demo

## The whole suite: every notebook (nbdev_test) and the pytest tests.
test: install
	nbdev_test --n_workers 2
	$(PYTHON) -m pytest -q tests

export:
	nbdev_export
	nbdev_clean

## The documentation site, from the executed notebooks: _site/ (open _site/index.html or serve it).
docs: install
	$(PYTHON) tools/docs.py

## The site checked as files (links, contents lists, API entries, images, figure text, search index, the command
## line's page), then in a real browser: headless Chromium (Debian: apt-get install -y chromium) via Playwright, with a
## screenshot of every page in _site_check/. `python tools/docs_check.py --static` runs the first part alone.
docs-check: docs
	$(PYTHON) tools/docs_check.py
