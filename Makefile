# 9plan: `make run` starts the web app, `make test` runs the whole suite; both set up first.
# `make check` is the quick loop while editing (lint, types, the tests not marked slow).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
HOST ?= 127.0.0.1
PORT ?= 8000
# pytest-xdist workers for the parallel part of the suite (the machine's two cores).
JOBS ?= 2
PYTEST := $(PY) -m pytest
XDIST := -n $(JOBS) --dist loadgroup

.PHONY: install install-dev run mcp test check lint bench bench-peers bench-peers-install clean

# Running needs requirements.txt only; the tests and the linters add requirements-dev.txt.
# Each has its stamp, so `make run` on a fresh checkout does not wait for pytest and mypy.
$(PY):
	@echo "Creating the virtual environment $(VENV) with $(PYTHON)..."
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(PY)
	@echo "Installing 9plan's dependencies into $(VENV) (first run only, about a minute)..."
	$(PIP) -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	@echo "Installing the development tools into $(VENV) (pytest, ruff, mypy; first run only)..."
	$(PIP) -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

# `manage.py serve` is what an installed 9plan runs as `9plan serve`: migrate, collect the
# static files, then gunicorn (static files by whitenoise).
run: install
	$(PY) manage.py serve --host $(HOST) --port $(PORT) --workers 2

mcp: install
	$(PY) manage.py mcp

# The suite in two passes, both always run; `make test` fails if either does. First every
# test not marked `serial`, on $(JOBS) pytest-xdist workers; then the `serial` ones, which
# race real processes, kill them or wait on them against a clock, one at a time with no
# other test beside them. Exit status 5 (no test selected, were nothing marked `serial`)
# does not fail the second pass.
test: install-dev
	@status=0; \
	echo "$(PYTEST) $(XDIST) -m 'not serial'"; \
	$(PYTEST) $(XDIST) -m "not serial" || status=$$?; \
	echo "$(PYTEST) -m serial"; \
	$(PYTEST) -m serial || { rc=$$?; [ $$rc -eq 5 ] || [ $$status -ne 0 ] || status=$$rc; }; \
	exit $$status

# The quick tier while editing: lint and types, then the tests marked neither slow nor
# serial (no subprocesses, browsers or long property-based loops) on $(JOBS) workers. The
# tests run even when lint fails; `make check` fails if either does.
check: install-dev
	@status=0; \
	$(MAKE) --no-print-directory lint || status=$$?; \
	echo "$(PYTEST) $(XDIST) -m 'not slow and not serial'"; \
	$(PYTEST) $(XDIST) -m "not slow and not serial" || status=$$?; \
	exit $$status

# ruff (lint, then format) and mypy with the Django and DRF plugins, all configured in
# pyproject.toml. Every step runs; `make lint` fails if any does.
lint: install-dev
	@status=0; \
	for step in "ruff check ." "ruff format --check ." "mypy"; do \
	  echo "$(PY) -m $$step"; \
	  $(PY) -m $$step || status=$$?; \
	done; \
	exit $$status

# With DATABASE_URL naming PostgreSQL (`DATABASE_URL=postgres://... make bench`), the
# PostgreSQL variants run as well (search, workers with its bare-SQL floor, teams over HTTP),
# each in a database of its own beside the one named. (Its HTTP round trips use httpx2, a
# development requirement.)
bench: install-dev
	$(PY) bench/run.py

# 9plan against Task Master and Shrimp Task Manager through one MCP client (bench/peers.py);
# the peers come from the npm registry into bench/.peers/ (not a dependency of 9plan).
PEERS := task-master-ai@0.43.1 mcp-shrimp-task-manager@1.0.21

bench-peers-install:
	mkdir -p bench/.peers
	test -f bench/.peers/package.json || echo '{"name": "nineplan-bench-peers", "private": true}' > bench/.peers/package.json
	cd bench/.peers && npm install --no-audit --no-fund --loglevel=error $(PEERS)

bench-peers: install
	$(PY) bench/peers.py

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .mypy_cache .ruff_cache test-artifacts build *.egg-info
