# websim-crawler: `make demo` runs the bundled demo job, `make test` runs the test suite.
# Both create or refresh a virtualenv in .venv and install what they need (apt packages too,
# when run as root on Debian).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := chromium redis-server python3.11-doc wget
# Installed without their recommends (MediaWiki's would bring a MySQL server): the gallery's
# query-routed PHP applications, served by PHP's built-in server on SQLite or files.
APT_PACKAGES_LEAN := php-cli php-sqlite3 php-intl php-mbstring php-xml mediawiki dokuwiki
STAMP := $(VENV)/.installed
BASE_STAMP := $(VENV)/.installed-base

.PHONY: demo test test-fast lint bench system-packages apt-install clean

$(BIN)/python:
	@$(PYTHON) -c "import ensurepip, venv" 2>/dev/null || { \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	    echo "installing python3-venv"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; \
	  else echo "$(PYTHON) cannot create virtualenvs: install python3-venv"; exit 1; fi; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The demo needs only the base package; the tests and benchmarks need every extra.
$(BASE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(BASE_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[render,distributed,warc,serve,test,bench,gallery]"
	touch $(STAMP) $(BASE_STAMP)

# pywb (the WARC replay the archive tests replay a crawl in) pins redis==2.10.6, which the
# [distributed] extra's redis>=5 excludes: it gets a virtualenv of its own.
PYWB_VENV := .venv-pywb
$(PYWB_VENV)/bin/wayback:
	$(PYTHON) -m venv $(PYWB_VENV)
	$(PYWB_VENV)/bin/python -m pip install --quiet "pywb>=2.8"

system-packages:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APT_PACKAGES)" APT_OPTIONS=""
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APT_PACKAGES_LEAN)" APT_OPTIONS="--no-install-recommends"

apt-install:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_OPTIONS) $$missing >/dev/null; \
	  else echo "note: missing Debian packages:$$missing (tests that need them are skipped)"; fi; \
	fi

demo: $(BASE_STAMP)
	$(BIN)/python -m websim_crawler demo

lint: $(STAMP)
	$(BIN)/ruff check websim_crawler tests benchmarks
	$(BIN)/ruff format --check websim_crawler tests benchmarks
	$(BIN)/mypy websim_crawler

test: system-packages $(STAMP) $(PYWB_VENV)/bin/wayback lint
	$(BIN)/python -m pytest -q -n 4 --dist loadfile

# The tests not marked slow (pytest.ini): no end-to-end crawl, server or run over 8 s.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n 4 --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/extraction.py
	$(BIN)/python benchmarks/clustering.py
	$(BIN)/python benchmarks/similarity.py
	$(BIN)/python benchmarks/neardup.py
	$(BIN)/python benchmarks/distributed.py
	$(BIN)/python benchmarks/crawl.py
	$(BIN)/python benchmarks/real_sites.py

clean:
	rm -rf $(VENV) $(PYWB_VENV) build dist *.egg-info
