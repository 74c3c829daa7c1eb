# The first Python 3.11+ on PATH by its usual names; override with PYTHON=/path/to/python.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null || echo python3.11)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench lint clean

$(BIN)/agentstate: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "agentstate needs Python 3.11 or newer; $(PYTHON) is older (set PYTHON=...)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

demo: $(BIN)/agentstate
	$(BIN)/python demo/demo.py

# In parallel, one worker per core (pytest-xdist); `make test PYTEST_ARGS=` runs serially.
PYTEST_ARGS ?= -n auto --dist loadgroup

test: $(BIN)/agentstate
	$(BIN)/ruff check agentstate tests bench demo
	$(BIN)/mypy
	$(BIN)/pytest $(PYTEST_ARGS)

bench: $(BIN)/agentstate
	$(BIN)/python bench/run.py

lint: $(BIN)/agentstate
	$(BIN)/ruff check agentstate tests bench demo
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
