# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install data demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## data: reference data, input data and sample submissions of every task (deterministic generators)
data: $(STAMP)
	$(BIN)/codascore reference --root .

## demo: score every sample submission as Codabench would; table on stdout, reports in demo/index.html
demo: data
	$(BIN)/codascore demo --out demo

## test: the whole test suite
test: data
	$(BIN)/python -m pytest -q

## bench: benchmark tables (median wall times)
bench: data
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf demo runs dist reference_data input_data sample_submissions .pytest_cache
