# 9plan: `make run` starts the web app, `make test` runs the whole suite; both set up first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run mcp test bench bench-peers bench-peers-install clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

# `manage.py serve` is what an installed 9plan runs as `9plan serve`: migrate, collect the
# static files, then gunicorn (static files by whitenoise).
run: install
	$(PY) manage.py serve --host $(HOST) --port $(PORT) --workers 2

mcp: install
	$(PY) manage.py mcp

test: install
	$(PY) -m pytest

# With DATABASE_URL naming PostgreSQL (`DATABASE_URL=postgres://... make bench`), the
# PostgreSQL variants run as well (search, workers with its bare-SQL floor, teams over HTTP),
# each in a database of its own beside the one named.
bench: install
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
	rm -rf $(VENV) staticfiles .pytest_cache test-artifacts build *.egg-info
