# The two commands of the README: `make book` and `make test`. Each creates .venv and
# installs what it needs by itself, so both work on a fresh machine with Python 3.11.
#
# Tiers: `make check` (quick, trains nothing), `make test` (the package's tests, trains
# nothing book-sized), `make book` (builds every artefact, the site, verifies every claim),
# `make test-book` (the tests that read the trained artefacts and the built site).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export NO_MKDOCS_2_WARNING := 1
# glibc returns freshly freed training temporaries to the kernel and page-faults them back
# every step; higher thresholds keep them (about 1.6x on an encoder step, see DESIGN.md).
export MALLOC_MMAP_THRESHOLD_ := 1073741824
export MALLOC_TRIM_THRESHOLD_ := 1073741824
# The book's trained verdicts were measured with OpenBLAS's SkylakeX (AVX-512) kernels. Float32
# training rounds differently on others, and a few claims sit on a seed boundary: seven flip with
# the Haswell kernels that this project's machines select through OPENBLAS_CORETYPE. Where the
# CPU has AVX-512, the build runs SkylakeX's kernels so that the book reproduces exactly
# (`make book BLAS_KERNEL=Haswell` chooses another). The store keys every entry on the kernel
# family, so runs of different kernels never mix.
ifneq ($(shell grep -qsw avx512f /proc/cpuinfo && echo yes),)
BLAS_KERNEL ?= SkylakeX
endif
ifneq ($(BLAS_KERNEL),)
export OPENBLAS_CORETYPE := $(BLAS_KERNEL)
endif

.PHONY: book build serve test test-book check check-oldest check-py313 verify browser clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "mlm-book needs Python >= 3.11; $(PYTHON) is $$($(PYTHON) --version 2>&1): set PYTHON=python3.11"; exit 2; }
	@# a .venv left by another interpreter (or a failed first attempt) is rebuilt, not reused
	@if [ -x $(BIN)/python ] && ! $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then \
		echo "recreating $(VENV): it was made by $$($(BIN)/python --version 2>&1)"; rm -rf $(VENV); fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[docs,test]'
	touch $(STAMP)

# Every trained artefact the chapters read, in one pool on every core (a warm store only checks).
build: $(STAMP)
	$(BIN)/mlm-book build

# The site's build judges every claim (the Claims page, computed while the chapters execute);
# with the gate on, a failing claim fails the build once the page is written. The build is
# recorded in site/.build.json, so that `make test-book` tests this site while it is current.
book: build
	MLM_BOOK_CLAIMS_GATE=1 $(BIN)/python docs/hooks/build_site.py site

# Serve the built site on localhost (it also reads from disk: open site/index.html).
serve:
	@test -f site/index.html || { echo "no site/index.html: run make book first"; exit 2; }
	$(PYTHON) -m http.server --directory site 8000

# The browser tests need a Chromium: $CHROMIUM, chromium, chromium-browser or google-chrome.
# With none, root on a Debian-like system installs Debian's package; anyone else is told how
# to get one, and the browser tests skip (under CI they fail instead: CI never skips them).
browser:
	@if [ -n "$$CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
	    || command -v google-chrome >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium (Debian package) for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "no Chromium found: the browser tests will be skipped (install one, e.g. 'sudo apt-get install chromium', or set CHROMIUM=/path/to/chrome)"; \
	fi

# Two pytest-xdist workers, each test file whole on one worker (its module fixtures computed once).
XDIST := -n 2 --dist loadfile

# The package's tests: unit, property, gradient, doctests, the bad-input sweeps. Nothing
# book-sized is trained, even with an empty store (MLM_BOOK_BUILD_NOTHING, see conftest.py).
test: $(STAMP)
	$(BIN)/python -m pytest -m "not book" $(XDIST)

# The same without the tests marked slow (the sweeps, the full enumerations): for iteration.
check: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not book" -q $(XDIST)

# The tests that read the book's trained artefacts and its built site (Chromium, Playwright):
# site/ when `make book` built it from the sources as they are, else a build of their own.
test-book: build browser
	$(BIN)/python -m pytest -m book $(XDIST)

# The support range, tested: the oldest pins (constraints/oldest.txt) on Python 3.11, and
# Python 3.13 when it is installed (on the PATH or under pyenv); a missing one is reported.
check-oldest:
	@test -x .venv-oldest/bin/python || $(PYTHON) -m venv .venv-oldest
	.venv-oldest/bin/pip install --quiet --upgrade pip
	.venv-oldest/bin/pip install --quiet -c constraints/oldest.txt -e '.[test]'
	.venv-oldest/bin/python -c 'import numpy, matplotlib; print("oldest pins: numpy", numpy.__version__, "matplotlib", matplotlib.__version__)'
	.venv-oldest/bin/python -m pytest -m "not slow and not book" -q -p no:cacheprovider $(XDIST)

# pyenv's shims answer `command -v` even for a version they will refuse to run: try each.
PY313_CANDIDATES := $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) $(shell command -v python3.13 2>/dev/null)
check-py313:
	@py=""; for candidate in $(PY313_CANDIDATES); do \
		if $$candidate -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then py=$$candidate; break; fi; \
	done; \
	if [ -z "$$py" ]; then echo "Python 3.13 not found (PATH, ~/.pyenv): the 3.13 check was NOT run"; exit 0; fi; \
	test -x .venv-py313/bin/python || $$py -m venv .venv-py313; \
	.venv-py313/bin/pip install --quiet --upgrade pip && .venv-py313/bin/pip install --quiet -e '.[test]' && \
	.venv-py313/bin/python --version && .venv-py313/bin/python -m pytest -m "not slow and not book" -q -p no:cacheprovider $(XDIST)

verify: $(STAMP)
	$(BIN)/mlm-book verify

clean:
	rm -rf site .pytest_cache .venv-oldest .venv-py313
