# Confer: every target creates or reuses the virtual environment in .venv itself.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench eval format clean playground

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Confer needs Python 3.11 or newer")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/confer index
	$(BIN)/confer ask

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Confer in Teams local mode beside Microsoft 365 Agents Playground (needs Node.js); see README, Teams.
playground: $(STAMP)
	bash deploy/teams/playground.sh

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .confer .mypy_cache .pytest_cache .ruff_cache bench-results
