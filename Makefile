# The README's two commands:  `make run`  (set up + main job)  and  `make test`.
# Setup creates .venv with uv when it can (installing uv with pip if needed),
# else with python3 -m venv + pip, and installs this project editable with the
# dev extra. It re-runs only when pyproject.toml changes.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.falcon-installed

.PHONY: setup core run evaluate test test-all lint mlflow-ui clean transport transport-test reproduce notebooks docs

setup: $(STAMP)

# the install compiles the emulator core (setup.py); a changed .pxd reinstalls
$(STAMP): pyproject.toml setup.py $(wildcard envs/*.pxd envs/*/*.pxd)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed (found " + sys.version.split()[0] + "); set PYTHON=/path/to/python3.11")'
	@if ! command -v uv >/dev/null 2>&1; then \
	    echo "uv not found: installing it with pip"; \
	    $(PYTHON) -m pip install --quiet --user uv >/dev/null 2>&1 || \
	    $(PYTHON) -m pip install --quiet uv >/dev/null 2>&1 || \
	    $(PYTHON) -m pip install --quiet --user --break-system-packages uv >/dev/null 2>&1 || \
	    echo "could not install uv: falling back to python -m venv + pip"; \
	fi; \
	export PATH="$$($(PYTHON) -m site --user-base 2>/dev/null)/bin:$$PATH"; \
	if command -v uv >/dev/null 2>&1; then \
	    [ -x $(BIN)/python ] || UV_PYTHON_DOWNLOADS=never uv venv --quiet --python $(PYTHON) $(VENV) && \
	    uv pip install --compile-bytecode --python $(BIN)/python -e '.[dev]'; \
	else \
	    { [ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV); } && \
	    $(BIN)/python -m pip install --upgrade pip && \
	    $(BIN)/python -m pip install -e '.[dev]'; \
	fi
	@touch $(STAMP)

## recompile the emulator core after editing one of its modules (those with a
## .pxd; without it they run as pure Python, with a warning): only what changed
core: setup
	@mkdir -p build && $(BIN)/python setup.py -q build_ext --inplace -j 2 > build/core.log 2>&1 \
	    || { tail -20 build/core.log; exit 1; }
	@$(BIN)/python -W ignore -c 'import envs, sys; sys.exit(envs.core_kind() != "compiled")' \
	    || { grep -A12 "Error compiling" build/core.log | head -40; \
	         echo "make core: WARNING: the compiled core did not build (build/core.log); the pure-Python core runs, far slower"; }

## extra arguments: RUN_ARGS of run (Hydra overrides), TEST_ARGS of test (pytest's),
## e.g. make run RUN_ARGS='runs=5'   make test TEST_ARGS=tests/test_docs.py
## the project's main job (configs/experiment/main.yaml): FALCON against minRTT,
## BLEST, ECF and RR on the four Fig. 2 scenarios; the first run builds the quick bank
run: core
	$(BIN)/python -m falcon.train $(RUN_ARGS)

## the default test suite (slow tests excluded; `make test-all` runs them too)
test: core
	@$(BIN)/python -c 'from falcon.deploy.transport import BUILD_HINT, built; built() or print("tests/test_transport.py and tests/test_deploy.py skipped:", BUILD_HINT)'
	$(BIN)/python -m pytest -q $(TEST_ARGS)

test-all: core
	$(BIN)/python -m pytest -q -m ''

## the multipath QUIC transport (transports/): tquic 1.6.0 from crates.io with
## transports/patches applied, release binaries in
## $${XDG_CACHE_HOME:-~/.cache}/falcon-transport/target/release (a rebuild: seconds)
transport:
	transports/build.sh

## its Rust unit tests, tests/test_transport.py and tests/test_deploy.py (which `make test` runs too)
transport-test: transport core
	transports/build.sh --test
	$(BIN)/python -m pytest -q tests/test_transport.py tests/test_deploy.py

## every seed figure beside ours: results/reproduce/quick/report.md (SCALE=paper: the full protocols)
SCALE ?= quick
reproduce: core
	$(BIN)/python -m falcon.reproduce scale=$(SCALE)

## JupyterLab on notebooks/ (installs the notebooks extra into the venv once)
notebooks: setup
	@$(BIN)/python -c 'import jupyterlab' 2>/dev/null || \
	    { command -v uv >/dev/null 2>&1 && uv pip install --python $(BIN)/python -e '.[notebooks]' || \
	      $(BIN)/python -m pip install -e '.[notebooks]'; }
	$(BIN)/jupyter lab notebooks/

## the documentation site: docs/_build/html (installs the docs extra into the
## venv once; the generated pages first; Sphinx warnings are errors; -E: every
## page is read again, so a warning is never skipped as up to date)
docs: setup
	@$(BIN)/python -c 'import sphinx, myst_parser, furo' 2>/dev/null || { \
	    export PATH="$$($(PYTHON) -m site --user-base 2>/dev/null)/bin:$$PATH"; \
	    pkgs=$$($(BIN)/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"]))'); \
	    { command -v uv >/dev/null 2>&1 && uv pip install --python $(BIN)/python $$pkgs; } || \
	      $(BIN)/python -m pip install $$pkgs; }
	$(BIN)/python scripts/docs_config.py docs/reference/config.md
	$(BIN)/python scripts/docs_results.py docs/results
	$(BIN)/python -m sphinx -q -E -W --keep-going -b html docs docs/_build/html

## the lint and format checks of CI and of the pre-commit hooks (.pre-commit-config.yaml)
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## the type check: mypy over envs/ and baselines/ ([tool.mypy] in pyproject.toml;
## strict on the scheduler contract, docs/guide/scheduler_contract.md)
.PHONY: typecheck
typecheck: setup
	$(BIN)/python -m mypy

mlflow-ui: setup
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache results multirun outputs build
	find envs -name '*.so' -delete -o -name '*.c' -delete
