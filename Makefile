# gym_gui: `make run` opens the cockpit, `make test` runs the whole suite. Both install what is missing first.
SHELL := /bin/bash
# Every process gym_gui starts (the daemon, workers, each `gym-gui` command, the suite's) imports from
# compiled bytecode: uv installs it compiled (--compile-bytecode, as pip does by itself), and Python
# writes what it compiles of gym_gui's own sources. A shell that turns writing it off would have each
# of them compile its imports again, about half of what a daemon or a command takes to start.
unexport PYTHONDONTWRITEBYTECODE
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Every package .venv gets, at the version `make test` (and so CI) ran: gym_gui's dependencies and its
# dev and ray extras. `make lock` writes it; the local packages go on top of it, editable.
LOCK := requirements.lock
# A worker kind is a folder of workers/ with a pyproject.toml: its package, its bundle's
# requirements.txt and its tests/ live there, so adding a kind touches nothing outside it.
KINDS := $(sort $(patsubst %/pyproject.toml,%,$(wildcard workers/*/pyproject.toml)))
LOCAL := sdk $(KINDS) .
PROJECTS := $(addsuffix /pyproject.toml,$(LOCAL))

.PHONY: run demo test install lock bundles envs sysdeps lint typecheck imports pytest bench bench-ingest bench-cleanrl bench-bdi bench-gui bench-hybrid bench-llm bench-sweep bench-arena bench-offline bench-envs bench-scale bench-runs-table bench-operator bench-cli bench-cold-start bench-bridge bench-charts bench-replay screenshots proto clean

run: install bundles envs
	scripts/run-cockpit.sh

# The terminal demo: the daemon and a short random-agent run with live progress.
demo: install
	$(BIN)/gym-gui demo

# The suite's temporary homes share the bundles `make bundles` installs (the user's, as `make run`
# uses them; GYM_GUI_BUNDLES moves them for both).
test: install bundles envs lint typecheck imports pytest

install: sysdeps $(STAMP)

# Worker venvs: every bundle an installed kind declares (its workers/<kind>/requirements.txt); a
# no-op once installed, rebuilt when a requirements file changes.
bundles: install
	@names=$$($(BIN)/python -c 'from gym_gui.workers import worker_catalog; print(*sorted(worker_catalog().bundles()))') && \
	for name in $$names; do $(BIN)/gym-gui bundles install $$name || exit 1; done

# The environment families installed beyond gym_gui's own dependencies, into the app and the bundles
# that train on them (`gym-gui envs install`; a no-op once there). The suite plays and trains Atari,
# and plays one episode of every family it installs.
ENV_FAMILIES := atari crafter minihack highway vizdoom metaworld dm_control pettingzoo
envs: install bundles
	@for family in $(ENV_FAMILIES); do $(BIN)/gym-gui envs install $$family || exit 1; done

sysdeps:
	@scripts/sysdeps.sh

# uv (pinned in the lock) installs the lock exactly, removing what is not in it, but for the families
# `gym-gui envs install` added (their packages are recorded in $(FAMILIES)); the local packages need
# nothing more (--no-deps: their dependencies are in the lock).
FAMILIES := $(VENV)/gym_gui_families
$(STAMP): $(LOCK) $(PROJECTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$$(grep '^uv==' $(LOCK))"
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(BIN)/python $(LOCK) $(wildcard $(FAMILIES)/*.txt)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --no-deps $(addprefix -e ,$(LOCAL))
	@touch $(STAMP)

# Rewrites the lock after a dependency changed in a pyproject.toml: a version already locked stays
# while it still fits; LOCK_ARGS=--upgrade (or --upgrade-package NAME) takes the newest that fits.
LOCK_ARGS ?=
lock: install
	@cp $(LOCK) $(LOCK).new
	printf -- '-e %s\n' sdk $(KINDS) '.[dev,ray]' | $(BIN)/uv pip compile - --quiet --python $(BIN)/python \
		--custom-compile-command "make lock" $(LOCK_ARGS) -o $(LOCK).new
	@# The local packages are not locked (make install adds them): drop their lines and notes. The
	@# lock is replaced only when it changed, so that make install stays a no-op otherwise.
	@awk '/^-e /{local = 1; next} local && /^ /{next} {local = 0; print}' $(LOCK).new > $(LOCK).next
	@rm $(LOCK).new
	@if cmp -s $(LOCK).next $(LOCK); then rm $(LOCK).next; else mv $(LOCK).next $(LOCK); fi

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

imports:
	$(BIN)/lint-imports

# Two processes: most tests wait on a daemon or a worker, so one process leaves a core idle.
pytest:
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

bench: install
	$(BIN)/python bench/telemetry_throughput.py

bench-envs: install envs
	$(BIN)/python bench/envs.py

bench-ingest: install
	$(BIN)/python bench/ingest.py

bench-cleanrl: install bundles
	$(BIN)/python bench/cleanrl_overhead.py

bench-bdi: install bundles
	$(BIN)/python bench/bdi_frozenlake.py

bench-gui: install
	$(BIN)/python bench/gui_live.py

# Measures a CleanRL operator too when the cleanrl bundle is installed (`make bundles`).
bench-hybrid: install
	$(BIN)/python bench/hybrid_gui.py

bench-llm: install
	$(BIN)/python bench/llm_worker.py

bench-sweep: install bundles
	$(BIN)/python bench/sweep_overhead.py

bench-arena: install bundles
	$(BIN)/python bench/arena.py

# The offline lane: dataset creation ÷ Minari's DataCollector, d3rlpy through gym_gui ÷ its fit called directly.
bench-offline: install bundles
	$(BIN)/python bench/offline.py

bench-scale: install
	$(BIN)/python bench/scale.py

bench-runs-table: install
	$(BIN)/python bench/runs_table.py

bench-operator: install bundles
	$(BIN)/python bench/operator_policy.py

# `gym-gui runs` against an idle daemon and one taking submissions, as ratios to the daemon's own answer.
bench-cli: install
	$(BIN)/python bench/cli_latency.py

# `gym-gui` from process start to its window shown and to connected to its daemon, vs a bare PySide6 window.
bench-cold-start: install
	$(BIN)/python bench/cold_start.py

bench-bridge: install bundles
	$(BIN)/python bench/bridge_latency.py

bench-charts: install bundles
	$(BIN)/python bench/charts_read.py

bench-replay: install
	$(BIN)/python bench/gui_replay.py

# Renders the main views in a real window under Xvfb into docs/screenshots/ (the README shows them);
# SCENES="bdi llm" renders only those (scripts/screenshots.py names them).
SCENES ?=
screenshots: install bundles
	xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/python scripts/screenshots.py docs/screenshots $(SCENES)

# The committed stubs are checked against this by tests/protocol/test_stubs.py.
proto:
	cd sdk/src && ../../$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. --pyi_out=. gym_gui_sdk/trainer.proto

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
