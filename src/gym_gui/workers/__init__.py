"""Worker kinds as plugins: the interface a worker package implements, the catalog of installed kinds, bundles."""

from gym_gui_sdk.contract import ONLY, PARAMETERS

from gym_gui.workers.api import (
    LANE_TABS,
    TABS,
    HelperOwner,
    InterpreterChooser,
    LaunchContext,
    LaunchPlan,
    ModelCheck,
    ModelImporter,
    ModuleLauncher,
    OperatorLauncher,
    OperatorPlan,
    OperatorSource,
    SecretsChecker,
    WorkerLauncher,
    WorkerPlugin,
)
from gym_gui.workers.bundle_directory import BundleDirectory
from gym_gui.workers.bundles import BundleExtra, BundleSpec, BundleStatus, PipStep, TorchBuild, TorchVariant
from gym_gui.workers.registry import (
    ENTRY_POINT_GROUP,
    WorkerCatalog,
    secrets_from_environment,
    worker_catalog,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "LANE_TABS",
    "ONLY",
    "PARAMETERS",
    "TABS",
    "BundleDirectory",
    "BundleExtra",
    "BundleSpec",
    "BundleStatus",
    "HelperOwner",
    "InterpreterChooser",
    "LaunchContext",
    "LaunchPlan",
    "ModelCheck",
    "ModelImporter",
    "ModuleLauncher",
    "OperatorLauncher",
    "OperatorPlan",
    "OperatorSource",
    "PipStep",
    "SecretsChecker",
    "TorchBuild",
    "TorchVariant",
    "WorkerCatalog",
    "WorkerLauncher",
    "WorkerPlugin",
    "secrets_from_environment",
    "worker_catalog",
]
