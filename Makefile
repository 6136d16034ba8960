# gym_gui: `make run` opens the cockpit, `make test` runs the whole suite. Both install what is missing first.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROJECTS := pyproject.toml sdk/pyproject.toml workers/random_worker/pyproject.toml

.PHONY: run test install sysdeps lint typecheck imports pytest bench proto clean

run: install
	$(BIN)/gym-gui demo

test: install lint typecheck imports pytest

install: sysdeps $(STAMP)

sysdeps:
	@scripts/sysdeps.sh

$(STAMP): $(PROJECTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e sdk -e workers/random_worker -e ".[dev]"
	@touch $(STAMP)

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

imports:
	$(BIN)/lint-imports

pytest:
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/telemetry_throughput.py

# The committed stubs are checked against this by tests/protocol/test_stubs.py.
proto:
	cd sdk/src && ../../$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. --pyi_out=. gym_gui_sdk/trainer.proto

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
