# Everything installs into .venv from the package registry; nothing else is assumed but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.runtime

demo: $(VENV)/.runtime
	$(BIN)/rnea torques robots/arm7.urdf robots/arm7_traj.csv -o /tmp/rnea-demo-torques.csv
	@echo "torques written to /tmp/rnea-demo-torques.csv; first rows:"
	@head -3 /tmp/rnea-demo-torques.csv

test: $(VENV)/.test
	$(BIN)/python -m pytest -q

$(VENV)/.bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $@ $(VENV)/.test $(VENV)/.runtime

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/run.py

bench-quick: $(VENV)/.bench
	$(BIN)/python benchmarks/run.py --quick

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
