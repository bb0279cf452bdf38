# Two entry points, each installing what it needs into .venv (Python >= 3.10 and a C++ compiler).
#   make demo   decode + classify the bundled public-domain sample, GPU/CPU/CPython table
#   make test   the whole test suite (NVRTC compile check, CUDA kernels under CPU emulation,
#               differential tests against Numba and the Python references)
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# Numba's, the CUDA emulator's and the model tables' caches stay inside the checkout and are reused by later runs.
export NUMBA_CACHE_DIR := $(CURDIR)/.cache/numba
export GPU_TEXT_EMU_CACHE := $(CURDIR)/.cache/cuda_emu
export GPU_TEXT_TABLE_CACHE := $(CURDIR)/.cache/tables

.PHONY: demo test bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python -m gpu_text.demo

# the seed's BytePiece trainer (the oracle of tests/test_bytepiece_trainer.py) is built once into
# .cache/piece-tokenizer; the caches are filled once first, so the two test workers and the CLI subprocesses do not all compile at once
test: $(STAMP)
	$(VENV)/bin/python -m tests.piece_tokenizer_oracle || echo "the seed's trainer CLI did not build: its oracle tests skip"
	$(VENV)/bin/python -m tests.warm_caches
	$(VENV)/bin/python -m pytest -n 2 --durations=10

bench: $(STAMP)
	$(VENV)/bin/python -m benchmarks
