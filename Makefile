# The first Python 3.11+ on PATH by its usual names; override with PYTHON=/path/to/python.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null || echo python3.11)
VENV := .venv
BIN := $(VENV)/bin
# The editable install as a plain path entry, not setuptools' import finder: the finder is
# imported by every Python process at start-up (re, pathlib, importlib.util…), which more than
# doubled the instructions of `python -c pass` in this venv (90 M → 40 M without it) and is
# paid by every hook and every subprocess of the tests. setuptools calls this mode
# transitional: where a future version refuses it, the ordinary editable install is used.
EDITABLE := --config-settings editable_mode=compat

.PHONY: demo test bench lint clean mutation

$(BIN)/agentstate: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "agentstate needs Python 3.11 or newer; $(PYTHON) is older (set PYTHON=...)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]' $(EDITABLE) || $(BIN)/pip install -q -e '.[dev]'
	@touch $@

demo: $(BIN)/agentstate
	$(BIN)/python demo/demo.py

# In parallel, one worker per core (pytest-xdist); `make test PYTEST_ARGS=` runs serially.
PYTEST_DEFAULT := -n auto --dist loadgroup
PYTEST_ARGS ?= $(PYTEST_DEFAULT)
# Branch coverage of the package, measured in the test processes (pytest-cov combines the
# xdist workers; the CLI's subprocesses are not traced). The floor sits just under the measured
# figure (docs/development.md); raise it as the figure grows. Only a whole-suite run
# (PYTEST_ARGS default or empty) is measured: a part would fall under the floor.
COV_FLOOR ?= 86
# A whole-suite run also lists its 15 slowest tests, so a CI log shows where the time goes.
COV_ARGS ?= $(if $(filter-out $(PYTEST_DEFAULT),$(PYTEST_ARGS)),,--cov=agentstate --cov-branch \
	--cov-report=term:skip-covered --cov-fail-under=$(COV_FLOOR) --durations=15)

test: $(BIN)/agentstate
	$(BIN)/ruff check agentstate tests bench demo
	$(BIN)/mypy
	$(BIN)/pytest $(PYTEST_ARGS) $(COV_ARGS)

bench: $(BIN)/agentstate
	$(BIN)/python bench/run.py

# Mutation testing of the gates, the budgeter, the tool policy, sync merge and the hook
# handler (bench/mutation.py; MUTATION_BUDGET seconds at most, then the score so far).
MUTATION_BUDGET ?= 1200
mutation: $(BIN)/mutmut
	$(BIN)/python bench/mutation.py --budget $(MUTATION_BUDGET)

$(BIN)/mutmut: $(BIN)/agentstate
	$(BIN)/pip install -q -e '.[dev,mutation]' $(EDITABLE) || $(BIN)/pip install -q -e '.[dev,mutation]'
	@touch $@

lint: $(BIN)/agentstate
	$(BIN)/ruff check agentstate tests bench demo
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis mutants .coverage
