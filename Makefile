# The two commands of the README. Both work in the project's own virtual environment, $(VENV) (default .venv,
# made with $(PYTHON) the first time and reused after), so a distribution's system Python is never touched.
# tools/install_torch.py picks the torch build for this machine: CPU-only wheels without an NVIDIA GPU, the CUDA
# build with one, and an installed torch that satisfies $(TORCH) is kept. TORCH is empty unless you set it
# (`make install TORCH='torch>=2.4'`): then the script installs tools/common.py's TORCH, the one CI tests.
PYTHON ?= python3
VENV ?= .venv
TORCH ?=
PY := $(VENV)/bin/python
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: runtime install demo test docs docs-check export dist

$(PY):
	$(PYTHON) -m venv $(VENV) || { echo "could not create $(VENV): on Debian/Ubuntu, apt-get install python3-venv" >&2; exit 1; }

## --no-compile: Python compiles a module to bytecode when it is first imported and keeps it, so only what is used
## is compiled, once (a whole-venv `compileall` would add 87 s to `install`, measured here). Python keeps nothing where
## PYTHONDONTWRITEBYTECODE is set (many containers set it, and so do this project's machines): every command then
## recompiled torch at its start, about 7 s each time (measured: `disentlit train --steps 3` 15.1 s, 7.7 s with
## bytecode). So the commands make runs may write it: into this project's venv and its own folders (.gitignore).
unexport PYTHONDONTWRITEBYTECODE
## torch first (pip: the script's decision reads pip's reports), then everything else with uv, Astral's pip-compatible
## installer (from PyPI, into the venv): `.[dev]`'s ~150 packages took pip ~100 s of CPU here (half of it resolving),
## uv ~15 s, the same versions from the same indexes (pip's configuration, which uv does not read: install_torch.py
## --uv-args passes it on). Where uv cannot install, pip does, after a line that says so.
PIP_INSTALL = $(PY) -m pip install --quiet --disable-pip-version-check --no-compile
UV_INSTALL = $(PY) -m uv pip install --quiet --python $(PY) --index-strategy unsafe-best-match
define install_with
	$(PY) tools/install_torch.py "$(TORCH)"
	$(PIP_INSTALL) uv && $(UV_INSTALL) $$($(PY) tools/install_torch.py --uv-args) -e $(1) \
	  || { echo "make: uv could not install what is asked; pip installs it instead" >&2; $(PIP_INSTALL) -e $(1); }
endef

## What the demo needs: torch and disentlit with its runtime dependencies (36 s into a fresh venv here, against 54 s
## for `install`, both with a sweep running beside; `install` adds the development tools (Jupyter, Ray, W&B,
## TensorBoard, Playwright, mkdocs), which the demo never uses).
runtime: $(PY)
	$(call install_with,.)

## Everything: the runtime and the development tools, for the notebooks, the tests, the docs and the release.
install: $(PY)
	$(call install_with,".[dev]")

## The main job on the embedded default: no download, no GPU.
demo: runtime
	disentlit demo --out demo $(DEMO_ARGS)

## The whole suite: every notebook (nbdev_test) and the pytest tests, each on two processes (pytest-xdist: a test file
## stays on one worker, so a file's fixtures are built once). One thread each (OpenMP: torch, scikit-learn, BLAS):
## two processes that each spin up a thread per core fight over two cores (measured: 1.4 to 2 times the CPU time).
test: export OMP_NUM_THREADS = 1
test: install
	nbdev_test --n_workers 2
	$(PY) -m pytest -q -n 2 --dist loadfile tests

export: install
	nbdev_export
	nbdev_clean

## The release: the sdist and the wheel of settings.ini's version in $(DIST)/ (default dist/), built from this checkout
## with the venv's setuptools (--no-isolation: no build environment is downloaded, so it works offline), then checked as
## an index would render them (twine check --strict). tests/test_release.py installs the wheel in a fresh venv.
DIST ?= dist
VERSION = $(shell sed -n 's/^version *= *//p' settings.ini)
dist: install
	$(PY) -m build --no-isolation --outdir $(DIST) .
	$(PY) -m twine check --strict $(DIST)/disentlit-$(VERSION).tar.gz $(DIST)/disentlit-$(VERSION)-py3-none-any.whl

## The documentation site, from the executed notebooks: _site/. Open _site/index.html as a file (search included) or
## serve it: python -m http.server --directory _site (it prints both).
docs: install
	$(PY) tools/docs.py

## The site checked as files (links, contents lists, API entries, images, figure text, search index, the command
## line's page), then in a real browser: headless Chromium (Debian: apt-get install -y chromium) via Playwright, with a
## screenshot of every page in _site_check/. `python tools/docs_check.py --static` runs the first part alone.
docs-check: docs
	$(PY) tools/docs_check.py
