# The two commands of the README: `make run` and `make test`. Everything they need is
# installed here, so a fresh machine with Python 3.11+ and make is enough.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=
# Test processes (pytest-xdist): a module's tests stay in one process, so its fixtures are
# built once; most tests wait on servers and the database, so two processes fit two cores.
# Modules start in collection order (tests/conftest.py puts the longest first), not xdist's
# most-tests-first order, which left the one-test schema fuzz for the end.
TEST_WORKERS ?= 2

.PHONY: run test lint format bench-deps clean-data

# uv installs the pinned requirements (the same versions pip would, from PyPI) in parallel:
# a fresh install of base + dev measured 21 s against pip's 206 s on this machine, no cache.
UV_VERSION := 0.13.9
INSTALL := $(BIN)/uv pip install --quiet --python $(BIN)/python

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet "uv==$(UV_VERSION)"

# Stamp files: reinstall only when a requirements file changes.
$(VENV)/.base-installed: requirements/base.txt pyproject.toml | $(BIN)/uv
	$(INSTALL) -r requirements/base.txt
	$(INSTALL) --no-deps -r requirements/model.txt
	$(INSTALL) --no-deps -e .
	touch $@

$(VENV)/.dev-installed: requirements/dev.txt $(VENV)/.base-installed
	$(INSTALL) -r requirements/dev.txt
	touch $@

# Debian's Chromium for the admin's browser tests (Playwright never downloads a browser here).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium

# Debian's Tesseract and its English data: OCR of scanned PDF pages (the file tests read one).
TESSERACT := /usr/bin/tesseract
$(TESSERACT):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tesseract-ocr tesseract-ocr-eng

# The local demo runs with DEBUG (and Django's built-in local key); nothing else does.
run: export DJANGO_DEBUG ?= true
# The server and the worker count their metrics into one folder, emptied at each start.
run: export PROMETHEUS_MULTIPROC_DIR ?= $(CURDIR)/.data/metrics
run: $(VENV)/.base-installed
	rm -rf "$$PROMETHEUS_MULTIPROC_DIR" && mkdir -p "$$PROMETHEUS_MULTIPROC_DIR"
	$(BIN)/python manage.py migrate_schemas --verbosity 0
	$(BIN)/python manage.py createcachetable
	$(BIN)/python manage.py bootstrap_demo --port $(PORT)
	# One ingestion worker beside the server (async ingests and large ones are jobs); it stops
	# with the server.
	$(BIN)/python manage.py rag_worker & worker=$$!; \
	trap 'kill $$worker 2>/dev/null' INT TERM EXIT; \
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

test: $(VENV)/.dev-installed $(CHROMIUM) $(TESSERACT)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy rag_plugin portal tenants

format: $(VENV)/.dev-installed
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Packages only the benchmarks need (stock LlamaIndex BM25 for comparisons, a profiler).
bench-deps: $(VENV)/.dev-installed
	$(INSTALL) --no-deps -r requirements/bench.txt

# Stop the embedded PostgreSQL and delete its data (the next run starts fresh).
clean-data:
	-$(BIN)/python -c "import pgserver; pgserver.get_server('.data/postgres', cleanup_mode='delete')"
	rm -rf .data
