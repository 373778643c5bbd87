# Two entry points a fresh machine needs: `make sync` (the main job on the default inputs
# pinned in pyproject.toml) and `make test`. Both create or reuse the virtual environment.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: sync test fuzz lint check bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# The main job succeeds when the tool did its work: conflicts and verify problems (exit 1)
# are the expected outcome of a real upgrade, and verify's last lines say plainly what is
# left and how to resolve it. Bad input (2), Ctrl-C (130) and internal errors (123) fail.
sync: $(STAMP)
	$(BIN)/omni-port extract
	$(BIN)/omni-port sync || [ $$? -eq 1 ]
	$(BIN)/omni-port verify || [ $$? -eq 1 ]

# The gate on this repository's own default workspace (after `make sync`): it fails while
# conflicts or verify problems remain, and before `make sync` (nothing extracted is nothing
# checked). CHECK_FLAGS="--format github" in CI.
CHECK_FLAGS ?=
check: $(STAMP)
	$(BIN)/omni-port check $(CHECK_FLAGS)

# Placement accuracy on real release history, and speed against the parsing floor.
bench: $(STAMP)
	$(BIN)/python bench/replay.py --upstreams all
	$(BIN)/python bench/replay.py
	$(BIN)/python bench/gpu_replay.py
	$(BIN)/python bench/speed.py

test: $(STAMP)
	$(BIN)/python -m pytest

# The property tests on newly drawn examples (`make test` replays a fixed set); a failure
# prints the @reproduce_failure blob to turn into a fix and a regression example.
fuzz: $(STAMP)
	OMNI_PORT_FUZZ=1 $(BIN)/python -m pytest tests/test_properties.py -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check omni_port tests bench
	$(BIN)/ruff format --check omni_port tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
