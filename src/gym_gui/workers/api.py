"""The worker plugin interface: what a worker kind tells gym_gui about itself, and what gym_gui asks of it.

A worker kind is a package that declares one entry point in the group ``gym_gui.workers``
pointing at a :class:`WorkerPlugin`. The daemon, the CLI and the window learn kinds only through
these objects (``gym_gui.workers.registry``): the spec (roster name, lane, capabilities), the
bundle the worker runs in, how a run config is checked and turned into a command, what the
worker's parameters are (for the generated form), and which tabs its runs get.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from gym_gui_sdk.contract import FormSpec, ManifestExtras
from gym_gui_sdk.operator import OperatorCard

from gym_gui.core.config import RunConfig
from gym_gui.core.workers import APP_BUNDLE, Lane, Launch, WorkerSpec
from gym_gui.storage.home import Home
from gym_gui.workers.bundle_directory import BundleDirectory
from gym_gui.workers.bundles import BundleSpec

# Tab names a plugin may list; the window maps each to its widget (ui/presenters.py).
TABS = ("live", "charts", "tensorboard", "wandb", "checkpoints", "replay")
# The tabs of a lane when the plugin names none: a telemetry-lane run stores every step, so it is
# watched live and replayed; an analytics-lane run has the metrics instruments and its artifacts.
LANE_TABS: dict[Lane, tuple[str, ...]] = {
    Lane.TELEMETRY: ("live", "replay"),
    Lane.ANALYTICS: ("live", "charts", "tensorboard", "wandb", "checkpoints", "replay"),
    Lane.HYBRID: ("live", "replay", "charts"),
}


@dataclass
class LaunchPlan:
    """What the supervisor starts: an argument list (never a shell string) and its extras."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # shown to the user as WARNING events
    # Manifest fields every run has that the launcher knows (``environment``, ``warm_start_from``).
    manifest: dict[str, Any] = field(default_factory=dict)
    # What the kind records of the run besides them (CleanRL: its script and the script's command
    # line), kept as the manifest's ``extras``.
    extras: ManifestExtras = field(default_factory=ManifestExtras)
    # The run's secrets this worker gets (None: all of them); the rest never reach its process.
    secrets: dict[str, str] | None = None
    # The program the worker runs in turn, when it wraps one (CleanRL: the script with its flags);
    # shown beside the command in previews and dry runs.
    script_argv: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LaunchContext:
    """What a launcher may use: the home its runs live in and the bundles directory."""

    home: Home
    bundles: BundleDirectory


class WorkerLauncher(Protocol):
    """How the daemon checks, describes and starts the runs of one worker kind."""

    def validate(self, config: RunConfig) -> None:
        """Refuse a config before anything is stored.

        Raises:
            ConfigError: naming the field and what is wrong with it.
        """

    def plan(
        self, run_id: str, config: RunConfig, run_dir: Path, secret_env: Mapping[str, str]
    ) -> LaunchPlan:
        """Resolve the command line; may take seconds (runs outside the supervisor's lock).

        Raises:
            ConfigError: the run cannot start; it fails before launch with this message.
        """

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        """What the worker offers for a form, ``gym-gui algorithms`` and a sweep's space (``query``
        narrows it: ``algorithm`` to one variant's parameters, ``env_id`` to one environment's
        defaults). With ``query[ONLY] == PARAMETERS`` (a sweep's check of its space) the launcher
        may answer its parameters alone."""


@dataclass(frozen=True)
class ModelCheck:
    """What a worker kind's loader found in a model file offered for import."""

    stored_as: str  # where the imported run keeps it (relative), where an evaluation looks by default
    step: int  # the training step it was saved at (0 when the file does not say)


@runtime_checkable
class HelperOwner(Protocol):
    """A launcher that keeps helper processes of its own between runs (optional; CleanRL's zygotes)."""

    def prepare(self, config: RunConfig) -> None:
        """Runs of ``config`` are about to launch (a sweep's trials): start, in the background, the
        helpers they will use, so the first one does not wait for them. Returns at once."""
        ...

    def close(self) -> None:
        """Stop them: the daemon is stopping. Runs they started go on, as workers do."""
        ...


@runtime_checkable
class InterpreterChooser(Protocol):
    """A launcher whose runs may bring an interpreter of their own instead of the kind's bundle
    (optional; CleanRL's ``params.python``): the daemon installs the bundle only for runs that use it."""

    def uses_bundle(self, config: RunConfig) -> bool:
        """Whether a run of ``config`` runs in the kind's bundle."""
        ...


@runtime_checkable
class ModelImporter(Protocol):
    """A launcher whose kind can take a model file trained elsewhere as a run of its own (optional)."""

    def check_model(self, path: Path, algorithm: str, env_id: str) -> ModelCheck:
        """Load ``path`` as an evaluation of it would, as a model of ``algorithm`` for ``env_id``.

        Raises:
            ConfigError: it cannot be loaded so, with the loader's own first line.
        """
        ...


@runtime_checkable
class SecretsChecker(Protocol):
    """A launcher whose runs cannot start without some secret (optional; CORL's online W&B needs a key):
    asked before anything is stored, with the names of the secrets the submitter gave the run (never
    their values), so the refusal is the submit's, as :meth:`WorkerLauncher.validate`'s is."""

    def check_secrets(self, config: RunConfig, given: frozenset[str]) -> None:
        """Refuse ``config`` when a secret it needs is not among ``given``.

        Raises:
            ConfigError: naming the field that asks for the secret and where the secret is looked for.
        """
        ...


@dataclass(frozen=True)
class OperatorSource:
    """What an operator is made of: a finished run's model, or a kind's parameters alone.

    Attributes:
        run_id: the run whose model it is ("" when it comes from a config file, ``llm:CONFIG.json``).
        config: that run's stored config (or the config file's).
        model: the model file, checked by gym_gui against the digest recorded when it was saved;
            None for a kind whose runs leave no model (a language model's operator is its parameters).
        model_path: the model's path inside the run as its manifest names it ("" for none).
    """

    run_id: str
    config: RunConfig
    model: Path | None = None
    model_path: str = ""


@dataclass(frozen=True)
class OperatorPlan:
    """How to start an operator's process (``gym_gui_sdk.operator.serve`` at its other end).

    ``card`` says what it acts on as known without loading the model (listing many operators must
    stay cheap); the process's own card, sent once its model is loaded, is the one the seat checks.
    ``secrets`` names the variables of the starter's environment the process gets (a model
    endpoint's key), never written anywhere.
    """

    card: OperatorCard
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()


@runtime_checkable
class OperatorLauncher(Protocol):
    """A launcher whose kind's runs can take the seat as operators (optional): a trained model that
    acts, a language model's configuration."""

    def operator(self, source: OperatorSource) -> OperatorPlan:
        """The card and command of the operator ``source`` makes, without loading its model.

        Raises:
            ConfigError: it cannot be an operator (no model of a kind that can act, a model file
                of another format), naming what is wrong.
        """
        ...


class ModuleLauncher:
    """A worker run as ``python -m module``, in gym_gui's own environment or in its plugin's bundle.

    The simplest complete launcher: most third-party workers need nothing else.
    """

    def __init__(self, context: LaunchContext, module: str, bundle: str | None = None) -> None:
        self.context = context
        self.module = module
        self.bundle = bundle

    def python(self) -> Path:
        if self.bundle is None:
            return Path(sys.executable)
        return self.context.bundles.python(self.bundle)

    def validate(self, config: RunConfig) -> None:
        """Nothing beyond what the daemon checks for every kind (the env id, the capabilities)."""

    def plan(
        self, run_id: str, config: RunConfig, run_dir: Path, secret_env: Mapping[str, str]
    ) -> LaunchPlan:
        return LaunchPlan(argv=[str(self.python()), "-m", self.module])

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        return FormSpec()


LauncherFactory = Callable[[LaunchContext], WorkerLauncher]


class WorkerPlugin:
    """Everything gym_gui needs to know about one worker kind.

    Args:
        spec: kind, roster name, lane, capabilities, who drives the run.
        bundle: the virtual environment its process runs in; None runs it in gym_gui's own
            environment (the app's gymnasium then checks env ids before launch).
        launcher: builds the kind's :class:`WorkerLauncher` for a daemon; None for kinds the
            client drives (human play) or that cannot run yet.
        tabs: the run tabs per lane, by name (:data:`TABS`); lanes left out get :data:`LANE_TABS`.
        form: what its run form is without asking the launcher (a ``FormSpec``: its variant label,
            sections, budget bounds, mapped fields); the launcher's ``describe`` answers the whole
            form (variants, parameters, environments), from which the window generates it.
    """

    def __init__(
        self,
        spec: WorkerSpec,
        *,
        bundle: BundleSpec | None = None,
        launcher: LauncherFactory | None = None,
        tabs: Mapping[Lane, tuple[str, ...]] | None = None,
        form: FormSpec | None = None,
    ) -> None:
        if (bundle.name if bundle is not None else APP_BUNDLE) != spec.bundle and spec.available:
            raise ValueError(
                f"worker {spec.kind!r}: its spec names bundle {spec.bundle!r} "
                f"but the plugin declares {bundle.name if bundle else 'none'!r}"
            )
        if spec.launch is Launch.DAEMON and spec.available and launcher is None:
            raise ValueError(f"worker {spec.kind!r} is launched by the daemon but has no launcher")
        unknown = {name for names in (tabs or {}).values() for name in names} - set(TABS)
        if unknown:
            raise ValueError(f"worker {spec.kind!r}: unknown tabs {sorted(unknown)}; known: {list(TABS)}")
        if form is not None and not isinstance(form, FormSpec):
            raise ValueError(f"worker {spec.kind!r}: form must be a FormSpec, got {type(form).__name__}")
        self.spec = spec
        self.form = form if form is not None else FormSpec()
        self.bundle = bundle
        self._launcher = launcher
        self._tabs = dict(tabs or {})

    def __repr__(self) -> str:
        return f"WorkerPlugin({self.spec.kind!r})"

    @property
    def kind(self) -> str:
        return self.spec.kind

    def launcher(self, context: LaunchContext) -> WorkerLauncher | None:
        """This kind's launcher for one daemon, or None when the daemon does not start its runs."""
        return self._launcher(context) if self._launcher is not None else None

    def tabs(self, lane: Lane) -> tuple[str, ...]:
        """The tabs a run of this kind gets on ``lane``."""
        return self._tabs.get(lane, LANE_TABS[lane])
