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

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "9plan admin: http://$(HOST):$(PORT)/admin/  (log in as a reviewer: $(PY) manage.py create_reviewer NAME; example data: $(PY) manage.py nineplan_demo)"
	$(VENV)/bin/gunicorn nineplan.wsgi --bind $(HOST):$(PORT) --workers 2 --access-logfile -

mcp: install
	$(PY) manage.py mcp

test: install
	$(PY) -m pytest

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) staticfiles .pytest_cache test-artifacts
