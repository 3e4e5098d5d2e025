# Everything installs into .venv from the package registry; nothing else is assumed but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench bench-quick shared-robots cpus clean

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

# Another CPU for the same-bits tests: a 64-bit ARM Python under qemu (tests/cpus/aarch64.sh; as
# root, from Debian's packages and the package index). Where it cannot be made, `make test` goes on
# without it and tests/test_same_bits.py says so (a failure under CI=true).
CPUS := .cpus
$(CPUS)/aarch64/.ready: pyproject.toml tests/cpus/aarch64.sh $(VENV)/.test
	bash tests/cpus/aarch64.sh $(CPUS)/aarch64 $(BIN)/python || echo "no ARM Python for the same-bits tests (see above)"

cpus: $(CPUS)/aarch64/.ready

test: $(VENV)/.test cpus
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
	rm -rf $(VENV) $(CPUS) build *.egg-info .pytest_cache .hypothesis
