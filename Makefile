# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install data demo screenshots test test-scale test-taurex test-codabench test-image image-env test-wheel wheel bundle logo image bench clean

## The Python of Codabench's stock image, codalab/codalab-legacy:py312: python3.12 on PATH when it runs,
## else the newest 3.12 in pyenv's versions folder (or PYTHON312=...).
PYENV_ROOT ?= $(HOME)/.pyenv
PYTHON312  ?= $(shell python3.12 -c 'import sys; assert sys.version_info[:2] == (3, 12); print(sys.executable)' \
                2>/dev/null || ls -d $(PYENV_ROOT)/versions/3.12*/bin/python3.12 2>/dev/null | sort -V | tail -n 1)
## The project's environment runs that Python when the machine has one (else python3, 3.10 to 3.12), with
## exactly the image's library versions: what the tests pass on is what Codabench runs.
PYTHON     ?= $(or $(PYTHON312),python3)
## The stock image's packages, and the pinned ones its program folders carry (wheels.lock, written once).
IMAGE_PACKAGES    := numpy==1.26.4 scipy==1.11.4 scikit-learn==1.5.1 pandas==2.2.3 pyyaml==6.0.2 \
                     matplotlib==3.8.4 numba==0.61.2 psutil==7.0.0
VENDORED_PACKAGES := $(shell awk '/^  - name:/ {name = $$3} /^    version:/ {gsub(/"/, "", $$2); \
                       print name "==" $$2}' wheels.lock)
PINNED            := $(IMAGE_PACKAGES) $(VENDORED_PACKAGES)
## The stock image's environment (make image-env): defined before any rule names it as a prerequisite, which
## make expands as it reads the rule.
IMAGE_VENV        := .venv-image
IMAGE_STAMP       := $(IMAGE_VENV)/.installed

# $(call check_pins,DIR,PINS): the environment in DIR has exactly these versions.
define check_pins
	$(1)/bin/python -c "import importlib.metadata as m, sys; \
	  pins = dict(p.split('==') for p in sys.argv[1:]); \
	  wrong = {k: m.version(k) for k in pins if m.version(k) != pins[k]}; \
	  sys.exit(f'not the pinned versions: {wrong}' if wrong else 0)" $(2)
endef

$(STAMP): pyproject.toml Makefile wheels.lock
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(PINNED) -e '.[test]'
	$(call check_pins,$(VENV),$(PINNED))
	@$(BIN)/python -c "import sys; sys.version_info[:2] == (3, 12) or print('note: the project environment \
	runs Python %d.%d; the image runs 3.12 (install one, or pass PYTHON312=...)' % sys.version_info[:2])"
	touch $(STAMP)

install: $(STAMP)

## data: reference data, input data and sample submissions of every task (deterministic generators);
## made again only when the package's sources change (the stamp), so test and demo share one run
DATA_STAMP := reference_data/.generated
data: $(DATA_STAMP)

$(DATA_STAMP): $(STAMP) $(shell find codascore -name '*.py')
	$(BIN)/codascore reference --root .
	touch $@

## demo: score every sample submission as Codabench would; table on stdout, reports in demo/index.html
demo: data
	$(BIN)/codascore demo --out demo

## screenshots: build/screenshots/TASK-SAMPLE-1400.png and -760.png, one scored page per task as a browser
## shows it (1400 px, and Codabench's iframe width); needs chromium (apt-get install chromium)
screenshots: data
	$(BIN)/python tests/report_pages.py --out build/screenshots

## test: the whole test suite, a test file per worker (JOBS=1 runs it in one process). The TauREx tests
## run in their own environment (make test-taurex): TauREx 3.3 needs numpy >= 2, the image has 1.26.4.
## The runner's sandbox tests need bubblewrap (apt-get install bubblewrap): without it they are listed as
## skipped (-rs), and fail under CI=true.
## Likewise the browser tests of the pages need chromium (apt-get install chromium).
JOBS ?= 2
## The fuzz tests record their counts in build/fuzz (pytest-xdist hides a worker's output); printed after.
FUZZ_REPORT := build/fuzz
test: data
	rm -rf $(FUZZ_REPORT)
	CODASCORE_FUZZ_REPORT=$(FUZZ_REPORT) $(BIN)/python -m pytest -q -rs -n $(JOBS) --dist loadfile -m "not taurex and not codabench"
	@$(BIN)/python -c "import json, pathlib, sys; [print('fuzz {family}: {runs} runs, outcomes {outcomes}, \
	{violations} contract violations, peak memory {peak_memory_mib} MiB'.format(**json.loads(p.read_text()))) \
	for p in sorted(pathlib.Path(sys.argv[1]).glob('*.json'))]" $(FUZZ_REPORT)

## test-scale: the judge at scale (tests/test_slurm_scale.py): about 2,000 units judged on the tests' SLURM of
## three nodes while worker processes are SIGKILLed at random, nothing lost nor run twice, the results those of an
## undisturbed judgement; it prints the units per minute and the judge's own time per unit. Needs slurm-wlm and
## munge, and root (each node a network namespace). SCALE_UNITS=500 makes it smaller.
SCALE_UNITS ?= 2000
test-scale: data
	CODASCORE_SCALE=1 CODASCORE_SCALE_UNITS=$(SCALE_UNITS) $(BIN)/python -m pytest -q -rs -p no:cacheprovider -s \
	  tests/test_slurm_scale.py

## test-taurex: the optional Ariel forward model through TauREx, in an environment of its own
TAUREX_VENV  := .venv-taurex
TAUREX_STAMP := $(TAUREX_VENV)/.installed

$(TAUREX_STAMP): pyproject.toml
	rm -rf $(TAUREX_VENV)
	$(PYTHON) -m venv $(TAUREX_VENV)
	$(TAUREX_VENV)/bin/pip install -q -e '.[test,taurex]'
	touch $@

test-taurex: data $(TAUREX_STAMP)
	$(TAUREX_VENV)/bin/python -m pytest -q -p no:cacheprovider -m taurex

## test-codabench: the tests against the real Codabench site (tests/codabench_site.py): the unmodified source
## snapshot of ../shared/codabench (CODABENCH_SHARED=DIR names another folder; the tests get it as
## $$CODABENCH_SNAPSHOT, and fail without it: a missing snapshot is never a skip) run on this machine (PostgreSQL,
## Redis and RabbitMQ, its broker, from Debian, moto's S3 server, its locked packages under Python 3.13 in
## .venv-codabench, built once per snapshot like .venv-image), on free ports of 127.0.0.1; the site is stopped
## even when a test fails. The bundles uploaded are `make bundle`'s, built with test-image's public seed into
## build/codabench-bundles; codascore worker serves their queues with the stock image's environment,
## .venv-image (tests/test_worker_site.py).
CODABENCH_SHARED   ?= ../shared/codabench
CODABENCH_SNAPSHOT := $(wildcard $(CODABENCH_SHARED)/codabench-*.tar.gz)
CODABENCH_VENV     := .venv-codabench
CODABENCH_STAMP    := $(CODABENCH_VENV)/.installed
CODABENCH_SITE     := build/codabench-site
CODABENCH_BUNDLES  := build/codabench-bundles

$(CODABENCH_STAMP): $(CODABENCH_SNAPSHOT) tests/codabench_site.py
	@test -n "$(CODABENCH_SNAPSHOT)" || { echo "no Codabench snapshot in $(CODABENCH_SHARED) \
	(codabench-*.tar.gz; CODABENCH_SHARED=... names another folder)" >&2; exit 1; }
	$(BIN)/python tests/codabench_site.py env --snapshot $(CODABENCH_SNAPSHOT) --venv $(CODABENCH_VENV)
	touch $@

test-codabench: export CODASCORE_BUNDLE_SEED := 271828182845904523536028747135266249775
test-codabench: $(STAMP) $(CODABENCH_STAMP) $(IMAGE_STAMP)
	$(BIN)/codascore bundle --out $(CODABENCH_BUNDLES) --check
	$(BIN)/python tests/codabench_site.py start --dir $(CODABENCH_SITE) --snapshot $(CODABENCH_SNAPSHOT) \
	  --venv $(CODABENCH_VENV) > /dev/null
	CODABENCH_SITE_DIR=$(CODABENCH_SITE) CODABENCH_BUNDLES=$(CODABENCH_BUNDLES) \
	  CODABENCH_SNAPSHOT=$(abspath $(CODABENCH_SNAPSHOT)) $(BIN)/python -m pytest -q -rs \
	  -p no:cacheprovider -m codabench; status=$$?; \
	  $(BIN)/python tests/codabench_site.py stop --dir $(CODABENCH_SITE); exit $$status

# $(call venv312,DIR): a fresh virtual environment of PYTHON312 in DIR, or how to get a Python 3.12.
define venv312
	@test -n "$(PYTHON312)" || { echo "No Python 3.12 (the interpreter of codalab/codalab-legacy:py312): \
	neither python3.12 on PATH nor $(PYENV_ROOT)/versions/3.12*. Install one (pyenv install 3.12, or the \
	python3.12 and python3.12-venv packages of Debian or the deadsnakes PPA), or pass PYTHON312=/path/to/python3.12." >&2; exit 1; }
	rm -rf $(1)
	$(PYTHON312) -m venv $(1)
endef

## test-image: build the bundles, extract them, and run every starting-kit sample through the extracted
## programs under Python 3.12 with the stock image's packages only (no sympy, mpmath, h5py or codascore:
## those come from the program folders), comparing with the project's environment (tests/image_run.py).
## The bundles' private seed is a fixed, public one here (CI needs no secret): the same as TEST_SEED of
## tests/test_bundle.py, so both share one generation of the bundle data (build/bundle-data).
$(IMAGE_STAMP): Makefile
	$(call venv312,$(IMAGE_VENV))
	$(IMAGE_VENV)/bin/pip install -q $(IMAGE_PACKAGES)
	$(call check_pins,$(IMAGE_VENV),$(IMAGE_PACKAGES))
	touch $@

## image-env: only the environment of test-image, .venv-image: what `codascore worker` runs the stock image's
## steps under, in its bubblewrap sandbox (docs/worker.md#where-a-step-runs)
image-env: $(IMAGE_STAMP)

test-image: export CODASCORE_BUNDLE_SEED := 271828182845904523536028747135266249775
test-image: data $(IMAGE_STAMP)
	$(BIN)/python tests/image_run.py --python $(IMAGE_VENV)/bin/python --out build/test-image

## wheel: dist/codascore-<version>-py3-none-any.whl, what participants install (pip install dist/codascore-*.whl).
## It leaves out the generation modules (setup.py), as the bundle's program folders do; build/lib is emptied
## first so that no file of an earlier build slips in.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
WHEEL   := dist/codascore-$(VERSION)-py3-none-any.whl
wheel: $(STAMP)
	rm -rf build/lib $(WHEEL)
	$(BIN)/pip wheel -q --no-deps -w dist .
	@echo "built $(WHEEL)"

## test-wheel: the wheel installed into a fresh Python 3.12 environment with the pinned packages, then
## codascore validate on valid and invalid samples of every family, run from outside the project folder
## (tests/wheel_run.py): the commands the participant pages give.
WHEEL_VENV := .venv-wheel
## The wheel's dependencies at the image's versions (numba and psutil, which codascore does not need, left out)
WHEEL_PINS := $(filter-out numba==% psutil==%,$(PINNED))
test-wheel: data wheel
	$(call venv312,$(WHEEL_VENV))
	$(WHEEL_VENV)/bin/pip install -q $(WHEEL_PINS) $(WHEEL)
	$(BIN)/python tests/wheel_run.py --venv $(WHEEL_VENV) --wheel $(WHEEL)

## bundle: dist/<name>.zip for the suite (competition.yaml) and each family (competitions/*.yaml), each
## checked; their data is generated from the private seed (bundle.seed, or the variable
## CODASCORE_BUNDLE_SEED) into build/bundle-data, not taken from the demo; the same sources and seed give
## byte-identical zips.
bundle: $(STAMP)
	$(BIN)/codascore bundle --out dist --check

## image: optional. The stock image plus the vendored packages, installed and byte-compiled (Dockerfile);
## for organisers who push it and name it in the YAML files (docs/bundles.md). linux/amd64, as workers need.
IMAGE_TAG ?= codascore/codascore:py312-$(VERSION)
image:
	docker build --platform linux/amd64 -t $(IMAGE_TAG) .

## logo: redraw logo.png (committed; run after changing pages/draw_logo.py)
logo: $(STAMP)
	$(BIN)/python pages/draw_logo.py

## bench: benchmark tables (median wall times)
bench: data
	$(BIN)/pip install -q pgmpy $(PINNED) || echo "pgmpy could not be installed: the UAI comparison columns read n/a"
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf demo runs dist reference_data input_data sample_submissions .pytest_cache $(TAUREX_VENV) \
	       $(IMAGE_VENV) $(WHEEL_VENV) build/test-image build/lib $(CODABENCH_VENV) $(CODABENCH_BUNDLES)
