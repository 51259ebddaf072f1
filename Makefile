# 9plan: `make run` starts the web app, `make test` runs the whole suite; both set up first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run mcp test bench clean

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

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) staticfiles .pytest_cache test-artifacts build *.egg-info
