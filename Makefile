# make docs  -- build libhurray and the package into .venv with what rendering needs (the docs extra), render the site (warnings are errors)
# make test  -- the same, plus the test extra (torch, pyarrow, Dask, ...), then the Rust crate's tests (cargo test), ruff, mypy and clang-format (make lint), and the whole pytest suite, docs included
# make install -- the package with both extras, as make test has it (for running single tests by hand)
# make format -- rewrite the tracked C files in the house style (.clang-format)
# make bench -- the benchmarks (make fuzz, make soak: see below)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
LOCK   := flock $(VENV)/.lock

DOCS_DEPS_STAMP := $(VENV)/.docs-deps-installed
TEST_DEPS_STAMP := $(VENV)/.test-deps-installed
PACKAGE_STAMP   := $(VENV)/.package-installed
SOURCES := $(shell find native src -type f \( -name '*.c' -o -name '*.h' -o -name '*.py' -o -name '*.map' \)) setup.py pyproject.toml MANIFEST.in

# The Rust binding (bindings/rust): cargo on PATH or in $HOME/.cargo/bin; its
# build output stays in bindings/rust/target, which the pytest suite reuses.
CARGO ?= $(or $(shell command -v cargo 2>/dev/null),$(HOME)/.cargo/bin/cargo)
RUST_CRATE := bindings/rust

.PHONY: all install install-docs docs test rust-test lint format format-check bench clean

all: test

$(PY):
	mkdir -p $(VENV) && flock $(VENV)/.lock $(PYTHON) -m venv $(VENV)

# Dependencies change rarely; the package is reinstalled whenever a source changes.
# Rendering needs the package's own dependencies and the docs extra only; the
# test extra (torch, pyarrow, Dask, the linters) is installed for everything
# else, and includes the docs extra, so either state serves `make docs`.
$(DOCS_DEPS_STAMP): pyproject.toml | $(PY)
	$(LOCK) $(PIP) install --quiet setuptools wheel "cffi>=1.17"
	$(LOCK) $(PIP) install --quiet ".[docs]"
	touch $@

$(TEST_DEPS_STAMP): pyproject.toml | $(PY)
	$(LOCK) $(PIP) install --quiet setuptools wheel "cffi>=1.17"
	$(LOCK) $(PIP) install --quiet ".[test,docs]"
	touch $@ $(DOCS_DEPS_STAMP)

# Built against whichever dependencies are there (the numpy of either set).
$(PACKAGE_STAMP): $(SOURCES) | $(DOCS_DEPS_STAMP)
	$(LOCK) sh -c 'rm -rf build && $(PIP) install --quiet --no-deps --no-build-isolation --force-reinstall .'
	touch $@

install-docs: $(DOCS_DEPS_STAMP) $(PACKAGE_STAMP)

install: $(TEST_DEPS_STAMP) $(PACKAGE_STAMP)

docs: install-docs
	$(PY) -m sphinx -n -W --keep-going -b html -c . docs _build/html

rust-test: install
	cd $(RUST_CRATE) && PATH="$(dir $(CARGO)):$$PATH" HURRAY_PYTHON="$(abspath $(PY))" \
		CARGO_TARGET_DIR="$(abspath $(RUST_CRATE))/target" $(CARGO) test --offline

# ruff (lint, configured in pyproject.toml), mypy (the package's types, with
# the C extensions' .pyi stubs) and clang-format before the suite.
lint: install format-check
	$(PY) -m ruff check .
	$(PY) -m mypy

# The C files clang-format keeps: every tracked .c and .h but the vendored
# ones under third_party/ (whose own .clang-format turns formatting off).
# clang-format is pinned in the test extra, so every contributor and CI run
# the same version.
CLANG_FORMAT := $(VENV)/bin/clang-format
C_FILES = $(shell git ls-files '*.c' '*.h' | grep -v '/third_party/')

format: $(TEST_DEPS_STAMP)
	@test -n "$(C_FILES)" || { echo "make format: no tracked C files (not a git checkout?)"; exit 1; }
	$(CLANG_FORMAT) -i $(C_FILES)

# Fails, naming file, line and column, on any file clang-format would change.
format-check: $(TEST_DEPS_STAMP)
	@test -n "$(C_FILES)" || { echo "make format-check: no tracked C files (not a git checkout?)"; exit 1; }
	$(CLANG_FORMAT) --dry-run -Werror $(C_FILES)

test: rust-test lint
	$(PY) -m pytest

bench: install
	$(PY) bench/run.py

clean:
	rm -rf build _build $(VENV) src/*.egg-info $(RUST_CRATE)/target

# make fuzz -- the descriptor, hurray-io, GGUF and dequantizer fuzzers (libFuzzer, ASan + UBSan), FUZZ_SECONDS each; see fuzz/run.sh
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz:
	HURRAY_FUZZ_TARGET=descriptor bash fuzz/run.sh $(FUZZ_SECONDS)
	HURRAY_FUZZ_TARGET=io HURRAY_FUZZ_BUILD=build/fuzz-io bash fuzz/run.sh $(FUZZ_SECONDS)
	HURRAY_FUZZ_TARGET=gguf HURRAY_FUZZ_BUILD=build/fuzz-gguf bash fuzz/run.sh $(FUZZ_SECONDS)
	HURRAY_FUZZ_TARGET=dequant HURRAY_FUZZ_BUILD=build/fuzz-dequant bash fuzz/run.sh $(FUZZ_SECONDS)

# make soak -- the full soak: 8 threads x 100,000 protocol round trips (the normal suite runs 10,000)
SOAK_TRIPS ?= 100000
.PHONY: soak
soak: install
	HURRAY_SOAK_TRIPS=$(SOAK_TRIPS) $(PY) -m pytest -p no:doctest -q tests/test_bridges_protocol_soak.py
