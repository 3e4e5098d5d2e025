# Everything installs into .venv from the package registry; nothing else is assumed but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench bench-quick shared-robots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[report]'
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

bench: shared-robots $(VENV)/.bench
	$(BIN)/python benchmarks/run.py

bench-quick: shared-robots $(VENV)/.bench
	$(BIN)/python benchmarks/run.py --quick

shared-robots:
	@test -f ../shared/urdf/iiwa14.urdf -a -f ../shared/urdf/simple_humanoid.urdf || \
		{ echo "the benchmarks need ../shared/urdf (iiwa14.urdf, simple_humanoid.urdf) beside this clone"; exit 2; }

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
