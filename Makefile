# Entry points for humans and CI; everything runs inside the project-local .venv.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

# Any Python 3.11-3.13 (e.g. `make PYTHON=python3.13 test`); 3.11 when it is on PATH.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
VENV_PY := $(CURDIR)/$(VENV)/bin/python
PYTHON_VERSION_OF = $(shell $(1) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYTHON_VERSION := $(call PYTHON_VERSION_OF,$(PYTHON))
ifeq ($(PYTHON_VERSION),)
$(error PYTHON=$(PYTHON) does not run; set PYTHON to a Python 3.11-3.13 interpreter)
endif
# The stamp names the Python version it was installed for: asking for another one (or a .venv whose
# interpreter is gone) re-creates .venv instead of reusing one built by a different interpreter.
VENV_STAMP := $(VENV)/.installed-python$(PYTHON_VERSION)

# Project-local Dagster instance (sqlite), so runs never touch ~/.dagster or a shared instance.
export DAGSTER_HOME := $(CURDIR)/.dagster_home
# As if .venv were activated: `dg` runs the project's code in the active environment and warns when
# it is not the project's .venv.
export VIRTUAL_ENV := $(CURDIR)/$(VENV)
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Classic Spark workers must run the same interpreter (and packages) as the driver.
export PYSPARK_PYTHON := $(VENV_PY)
export PYSPARK_DRIVER_PYTHON := $(VENV_PY)
# The JVM engines' jars (Delta for Spark), fetched by `make jars`; wide_assets.jvm loads them from here.
JARS := $(CURDIR)/.jars
export WIDE_ASSETS_JARS := $(JARS)

.PHONY: venv jars demo test unit dev lint style typecheck docs format clean distclean

# Re-installs whenever pyproject.toml changes; the stamp records the last successful install.
$(VENV_STAMP): pyproject.toml $(VENV)/bin/python
	@if [ "$(call PYTHON_VERSION_OF,$(VENV)/bin/python)" != "$(PYTHON_VERSION)" ]; then \
	  echo "creating $(VENV) with $(PYTHON) (Python $(PYTHON_VERSION))"; \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); \
	fi
	$(VENV)/bin/python -m pip install --upgrade pip
	$(VENV)/bin/python -m pip install -e '.[dev]'
	@rm -f $(VENV)/.installed*
	@touch $@

# Missing (its interpreter removed, or no .venv yet), it makes the stamp out of date.
$(VENV)/bin/python: ;

$(VENV): $(VENV_STAMP)

venv: $(VENV_STAMP) $(DAGSTER_HOME)/dagster.yaml

$(DAGSTER_HOME)/dagster.yaml:
	@mkdir -p $(DAGSTER_HOME)
	@printf '%s\n' \
	  'storage:' \
	  '  sqlite:' \
	  '    base_dir:' \
	  '      env: DAGSTER_HOME' \
	  'concurrency:' \
	  '  pools:' \
	  '    default_limit: 1' \
	  'telemetry:' \
	  '  enabled: false' > $@

# Pinned jars from Maven Central (jvm/pom.xml), checked against jvm/SHA256SUMS; fetched once, offline after.
# A fetch that fails fails the target: the JVM tests never skip for want of their jars.
$(JARS)/.fetched: jvm/pom.xml jvm/SHA256SUMS
	rm -rf $(JARS)
	mvn -q -B -f jvm/pom.xml dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory=$(JARS)
	cd $(JARS) && sha256sum --check --strict --quiet $(CURDIR)/jvm/SHA256SUMS
	@touch $@

jars: $(JARS)/.fetched

demo: $(VENV_STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(VENV)/bin/python -m demos

# Test files are spread over TEST_WORKERS processes, a file's tests staying together (their module
# fixtures build a deployment once); each worker starts its own engine session.
TEST_WORKERS ?= 2

# `dg check defs`: every defs.yaml against its component's schema, then the code location loads.
# `--no-loadscope-reorder`: files start in collection order, which puts the longest first
# (tests/conftest.py), not xdist's default of the files with the most tests first (which left the
# two 10-minute JVM launches, one test each, for the end). `--durations`: the slowest tests end the
# output, so a run's log says where its time went.
test: $(VENV_STAMP) $(DAGSTER_HOME)/dagster.yaml $(JARS)/.fetched
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30
	$(VENV)/bin/dg check defs

# The unit tier: no engine, no Delta table written by Spark; seconds.
unit: $(VENV_STAMP)
	$(VENV)/bin/python -m pytest tests/unit

dev: $(VENV_STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(VENV)/bin/dg dev --host 127.0.0.1

lint: style typecheck

# ruff: under a second.
style: $(VENV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy, strict: about 70 s on one core with no cache (a fresh clone).
typecheck: $(VENV_STAMP)
	$(VENV)/bin/mypy

# The site from docs/ (mkdocs.yml) into site/; strict: a warning (a broken link or anchor, a page
# outside the nav, an API reference that does not resolve) fails the build. Seconds, no engine.
docs: $(VENV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

format: $(VENV_STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf .dagster_home .jars lake spark-warehouse metastore_db derby.log build site .pytest_cache .ruff_cache
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name '*.egg-info' \) -type d -print0 \
	  | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV)
