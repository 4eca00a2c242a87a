# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install data demo test test-pinned bundle logo image bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test,taurex]'
	touch $(STAMP)

install: $(STAMP)

## data: reference data, input data and sample submissions of every task (deterministic generators);
## made again only when the package's sources change (the stamp), so test, test-pinned and demo share one run
DATA_STAMP := reference_data/.generated
data: $(DATA_STAMP)

$(DATA_STAMP): $(STAMP) $(shell find codascore -name '*.py')
	$(BIN)/codascore reference --root .
	touch $@

## demo: score every sample submission as Codabench would; table on stdout, reports in demo/index.html
demo: data
	$(BIN)/codascore demo --out demo

## test: the whole test suite
test: data
	$(BIN)/python -m pytest -q

## test-pinned: the test suite again with exactly the libraries of the Codabench image (codalab-legacy:py312
## plus what the project's Dockerfile adds), in a second environment: catches code that needs newer versions.
PINNED_VENV  := .venv-pinned
PINNED_STAMP := $(PINNED_VENV)/.installed
PINNED       := numpy==1.26.4 scipy==1.11.4 scikit-learn==1.5.1 pandas==2.2.3 pyyaml==6.0.2 matplotlib==3.8.4 \
                sympy==1.10.1 mpmath==1.3.0 h5py==3.12.1

$(PINNED_STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(PINNED_VENV)
	$(PINNED_VENV)/bin/pip install -q $(PINNED) 'pytest>=7' 'hypothesis>=6'
	$(PINNED_VENV)/bin/pip install -q --no-deps -e .
	$(PINNED_VENV)/bin/python -c "import importlib.metadata as m, sys; \
	  pins = dict(p.split('==') for p in sys.argv[1:]); \
	  wrong = {k: m.version(k) for k in pins if m.version(k) != pins[k]}; \
	  sys.exit(f'not the pinned versions: {wrong}' if wrong else 0)" $(PINNED)
	touch $@

test-pinned: data $(PINNED_STAMP)
	$(PINNED_VENV)/bin/python -m pytest -q -p no:cacheprovider

## bundle: dist/<name>.zip for the suite (competition.yaml) and each family (competitions/*.yaml), each
## checked; their data is generated from the private seed (bundle.seed, or the variable
## CODASCORE_BUNDLE_SEED) into build/bundle-data, not taken from the demo; the same sources and seed give
## byte-identical zips.
bundle: $(STAMP)
	$(BIN)/codascore bundle --out dist --check

## image: build the Docker image the competitions name (linux/amd64, as Codabench's workers need);
## push it with `docker push $$(.venv/bin/python -c 'from codascore.bundle import DOCKER_IMAGE; print(DOCKER_IMAGE)')`
image: $(STAMP)
	docker build --platform linux/amd64 -t $$($(BIN)/python -c 'from codascore.bundle import DOCKER_IMAGE; print(DOCKER_IMAGE)') .

## logo: redraw logo.png (committed; run after changing pages/draw_logo.py)
logo: $(STAMP)
	$(BIN)/python pages/draw_logo.py

## bench: benchmark tables (median wall times)
bench: data
	$(BIN)/pip install -q pgmpy || echo "pgmpy could not be installed: the UAI comparison columns read n/a"
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf demo runs dist reference_data input_data sample_submissions .pytest_cache $(PINNED_VENV)
