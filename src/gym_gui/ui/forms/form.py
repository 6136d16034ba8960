"""GeneratedForm: the one run form, rendered for any worker kind from the form spec its plugin describes."""

from __future__ import annotations

import logging
from typing import Any

from gym_gui_sdk.contract import FormSpec, Section
from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.records import LaunchPreview, RunRecord, WorkerDescription
from gym_gui.core.states import RunState
from gym_gui.core.workers import Lane
from gym_gui.datasets import DatasetCard, DatasetStore
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.capabilities import offers_trained_model
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.base import RunForm
from gym_gui.ui.forms.model import NO_VARIANT, RunModel
from gym_gui.ui.forms.params import Params
from gym_gui.ui.forms.preview import CommandPreview, plan_text
from gym_gui.ui.forms.rows import CommonRows
from gym_gui.ui.forms.scripts import ScriptPicker
from gym_gui.ui.forms.tracking import TrackingBox
from gym_gui.ui.forms.widgets import ParamEditors, scrolled
from gym_gui.ui.settings import Settings
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)


class GeneratedForm(RunForm):
    """The run form of a worker kind, over a :class:`RunModel`, from its :class:`FormSpec`.

    The daemon describes the kind (``DescribeWorker``): a kind with variants (CleanRL's scripts) lists
    them first, runnable ones selectable and the others greyed with why, then describes the chosen one.
    The form shows the common rows (environment, seed, budget, render rate for kinds that stream their
    steps, where it runs, notes), the variant picker, the sections the spec declares (GPU, checkpoints,
    warm start, tracking), a password field per secret the kind takes (``WorkerSpec.secrets``: sent as
    the run's secrets only), one editor per parameter (by group; fields the config sets from a common
    row, ``mapped``, are left out), the command the daemon would run (PreviewRun) and Dry run. Only
    parameters changed from their defaults go into ``RunConfig.params``.

    A kind whose defaults depend on the environment (``env_dependent``: the LLM worker's prompt
    template) is described again whenever the environment changes.
    """

    described = Signal()  # the chosen variant's (or the kind's) parameters are shown
    model: RunModel

    def __init__(
        self,
        kind: str,
        link: DaemonLink,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        self.worker_kind = kind
        plugin = worker_catalog().plugin(kind)
        self.spec = plugin.spec
        model = RunModel(kind, streams_steps=self.spec.lane is not Lane.ANALYTICS)
        if (
            self.spec.default_budget is not None
        ):  # the kind's own starting budget, until the user's comes back
            model.budget_kind, budget = self.spec.default_budget
            model.budget = str(budget)
        model.secrets = dict.fromkeys(self.spec.secrets, "")
        model.take_form(plugin.form)  # what the plugin says of its form before the daemon is asked
        super().__init__(model, link, settings, parent)
        self.bundle_installed: bool | None = None
        self._generation = 0
        self._loading = False
        self._described_env: str | None = None
        self._pending_prefill: tuple[dict[str, Any], str] | None = None
        self._build()
        self.restore_settings()
        link.connection_changed.connect(self._connection)
        link.run_updated.connect(self._run_updated)
        self._validate()
        self.preview.schedule()
        if link.connected:
            self._list_trained()
            self.reload()
        else:
            self.status_label.setText("waiting for the daemon…")

    # -------------------------------------------------------- layout

    def _build(self) -> None:
        self.picker = ScriptPicker()
        self.picker.chosen.connect(self._variant_chosen)
        self.picker.hide()
        self.bundle_note = self.picker.bundle_note
        self.install_progress = self.picker.install_progress
        self.rows = CommonRows(self.spec, self.model, self._changed, self._secret_typed)
        self.tracking = TrackingBox(self.model.tracking, self._changed)
        self.tracking.hide()
        self.params_box = ParamEditors("Parameters", "Asking the daemon for the parameters…")
        self.preview = CommandPreview(self.link, self._preview_request)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scrolled(self.picker, self.rows, self.tracking, self.params_box), 1)
        layout.addWidget(self.preview)
        layout.addWidget(self.rows.dry_run_output)
        layout.addWidget(self.rows.dry_run_check)
        layout.addWidget(self.error_label)
        layout.addWidget(self.status_label)
        layout.addWidget(self.submit_button)
        # The fields by the names the forms have always had.
        rows = self.rows
        self.env_combo, self.env_note, self.seed_spin = rows.env_combo, rows.env_note, rows.seed_spin
        self.budget_edit, self.budget_kind_combo = rows.budget_edit, rows.budget_kind_combo
        self.render_fps_spin, self.executor_row = rows.render_fps_spin, rows.executor_row
        self.gpu_check, self.gpu_mandatory_check = rows.gpu_check, rows.gpu_mandatory_check
        self.checkpoint_every_edit = rows.checkpoint_every_edit
        self.start_from_combo, self.secret_edits = rows.start_from_combo, rows.secret_edits
        self.dry_run_check, self.dry_run_output = rows.dry_run_check, rows.dry_run_output
        self.wandb_mode_combo = self.tracking.wandb_mode_combo
        self.wandb_project_edit = self.tracking.wandb_project_edit
        self.wandb_entity_edit = self.tracking.wandb_entity_edit
        self.wandb_run_name_edit = self.tracking.wandb_run_name_edit
        self.wandb_key_edit = self.tracking.wandb_key_edit

    def refresh(self) -> None:
        self.rows.refresh()
        self.tracking.refresh()
        self.params_box.refresh()
        self._enable_dependents()

    def mark(self, errors: dict[str, str]) -> None:
        self.rows.mark(errors)
        self.params_box.mark(errors)

    def _enable_dependents(self) -> None:
        self.rows.enable_dependents()
        self.tracking.enable_dependents()

    def _changed(self) -> None:
        if self._restoring:
            return
        self._enable_dependents()
        super()._changed()
        self.preview.schedule()
        if self.model.form.env_dependent and self.model.env_id.strip() != self._described_env:
            self._describe(self.model.algorithm if self.model.form.variant_label else "")

    def _secret_typed(self, name: str, text: str) -> None:
        self.model.secrets[name] = text
        self._changed()

    def _show_form(self, form: FormSpec) -> None:
        """Show the parts of the form the kind declares."""
        self.model.take_form(form)
        self.picker.setVisible(bool(form.variant_label))
        self.picker.set_label(form.variant_label)
        self.tracking.setVisible(form.has(Section.TRACKING))
        self.rows.show_sections(form)
        if form.has(Section.DATASETS):
            self.offer_datasets()
        self.params_box.setTitle(f"{form.variant_label} parameters" if form.variant_label else "Parameters")
        self._show_model()

    def showEvent(self, event: QShowEvent) -> None:
        # Datasets come and go outside the form (the CLI, the Datasets browser): offer them as they are now.
        if self.model.has(Section.DATASETS):
            self.offer_datasets()
        super().showEvent(event)

    def offer_datasets(self) -> None:
        """Offer the home's datasets as they are now (one that cannot be read is left out and logged:
        the Datasets browser lists it with why)."""
        store = DatasetStore(Home(self.link.home))
        cards: list[DatasetCard] = []
        for name in store.names():
            try:
                cards.append(store.card(name))
            except GymGuiError as exc:
                log.warning("dataset %s is not offered: %s", name, exc)
        self.rows.offer_datasets(cards)

    # -------------------------------------------------------- talking to the daemon

    def _connection(self, connected: bool, _message: str) -> None:
        if connected:
            self._list_trained()
        if connected and self.model.shown is None and not self._loading:
            self.reload()

    def reload(self) -> None:
        """Ask the daemon again what the kind offers (its variants, then the chosen one's parameters)."""
        self._generation += 1
        generation = self._generation
        self._loading = True
        self.status_label.setText(f"asking the daemon about {self.spec.display_name}…")
        env_id = self.model.env_id.strip()
        self.link.call(
            lambda client: client.describe_worker(self.worker_kind, env_id=env_id),
            lambda description: self._listed(generation, env_id, description),
            lambda message: self._describe_failed(generation, message),
        )

    def _describe_failed(self, generation: int, message: str) -> None:
        if generation != self._generation:
            return
        self._loading = False
        self.status_label.setText("")
        self._show_error(f"the daemon could not describe {self.spec.display_name}: {message}")
        self.params_box.say("The parameters could not be read.")
        self._validate()

    def _listed(self, generation: int, env_id: str, description: WorkerDescription) -> None:
        if generation != self._generation:
            return
        form = description.form
        self.bundle_installed = description.bundle_installed
        self._show_form(form)
        self._show_error("")
        self.status_label.setText("")
        if not form.variant_label:  # the kind's own parameters came with this answer
            self._show_parameters(env_id, form)
            return
        self.picker.bundle = description.bundle
        if not description.bundle_installed and not form.variants:
            # Without the bundle there is nothing to list; the daemon installs it when a run needs it.
            self.picker.show_missing_bundle(description.bundle, self.model.algorithm)
            self.rows.show_envs(
                None,
                f"Which environments a {form.variant_label.lower()} trains on is known once the "
                f"{description.bundle} bundle is installed: gym-gui bundles install {description.bundle} "
                "(or the first run installs it).",
            )
            self.params_box.say("Parameters appear once the bundle is installed.")
            self._show_model()
            self._loading = False
            self._validate()
            self.preview.schedule()
            return
        chosen = self.picker.show_scripts(form.variants, self.model.algorithm)
        if not chosen:
            self._loading = False
            self._show_error(f"no {form.variant_label.lower()} of {self.spec.display_name} can run here")
            self._validate()
            return
        self._describe(chosen)

    def _variant_chosen(self, name: str) -> None:
        if self._restoring:
            return
        if self.bundle_installed:
            self._describe(name)
        else:
            self.model.algorithm = name
            self._changed()

    def _describe(self, variant: str) -> None:
        """Ask for ``variant``'s parameters (the kind's own with ``variant`` empty) in the chosen env."""
        self._generation += 1
        generation = self._generation
        self._loading = True
        env_id = self.model.env_id.strip()
        self._described_env = env_id
        if variant != self.model.shown:
            self.model.keep_typed()  # what was typed for the previous variant comes back with it
            self.model.algorithm = variant or self.model.algorithm
            self.params_box.show_params(Params(), self._changed, f"Reading {variant}'s own arguments…")
            self._validate()
        query = {"env_id": env_id, **({"algorithm": variant} if variant else {})}
        self.link.call(
            lambda client: client.describe_worker(self.worker_kind, **query),
            lambda description: self._variant_described(generation, env_id, description),
            lambda message: self._describe_failed(generation, message),
        )

    def _variant_described(self, generation: int, env_id: str, description: WorkerDescription) -> None:
        if generation == self._generation:
            self._show_form(description.form)
            self._show_parameters(env_id, description.form)

    def _show_parameters(self, env_id: str, form: FormSpec) -> None:
        self._loading = False
        self._described_env = env_id
        variant = next((v for v in form.variants if v.name == form.variant), None)
        self.model.use_parameters(form, variant.default_env if variant else "")
        if form.variant_label:
            family = variant.summary if variant and variant.summary else "its own library"
            self.rows.show_envs(
                form.envs,
                form.envs_error
                or f"{form.variant} makes its environments with {family}, which gym_gui cannot list: "
                "the daemon checks the id typed here.",
            )
        self.params_box.show_params(
            self.model.params,
            self._changed,
            "This script has no parameters besides the common ones."
            if form.variant_label
            else "This kind has no parameters besides the common ones.",
        )
        self._show_model()
        self._show_error("")
        self._validate()
        self.preview.schedule()
        self.described.emit()
        if self._pending_prefill is not None and form.variant == (
            self.model.algorithm if form.variant else ""
        ):
            params, origin = self._pending_prefill
            self._pending_prefill = None
            self._prefill_done(self.model.apply_params(params), origin)

    def _apply_prefill(self, params: dict[str, Any], origin: str) -> None:
        # The parameters are the chosen variant's: a config naming another one waits for its description.
        wanted = self.model.algorithm if self.model.form.variant_label else NO_VARIANT
        if self.model.shown == wanted and not self._loading:
            self._prefill_done(self.model.apply_params(params), origin)
            return
        if self.bundle_installed is False and self.model.form.variant_label:
            self._prefill_done(list(params), origin)  # no variant to read yet: nothing can take them
            return
        self._pending_prefill = (params, origin)
        self.status_label.setText(f"reading {wanted or 'the'} parameters to fill them from {origin}…")
        if wanted and self.bundle_installed and self.picker.algorithm() != wanted:
            self.picker.set_algorithm(wanted)  # comes back through _variant_chosen → _show_parameters
        elif self.bundle_installed and not self._loading:
            self._describe(wanted)

    # -------------------------------------------------------- fields

    @property
    def description(self) -> FormSpec | None:
        """The form spec whose parameters are shown (None while they are read)."""
        return self.model.form if self.model.shown is not None else None

    @property
    def ready(self) -> bool:
        """Whether the form can describe a run: its parameters are shown, or it needs none to (a kind
        without variants runs on its parameters' defaults; a variant is typed while the bundle is missing)."""
        if self.model.shown is not None or not self.model.form.variant_label:
            return True
        return self.bundle_installed is False and not self._loading

    def algorithm(self) -> str:
        return self.model.algorithm.strip()

    def set_algorithm(self, name: str) -> None:
        """Choose a variant (its parameters are asked for again)."""
        self.picker.set_algorithm(name)

    def set_env(self, env_id: str) -> None:
        """Choose an environment as the user could (one the variant trains on, while that is known)."""
        self.rows.set_env(env_id)

    def param_names(self) -> list[str]:
        """The parameters with an editor, in the kind's order."""
        return self.params_box.names()

    def param_editor(self, name: str) -> QWidget | None:
        return self.params_box.editor_widget(name)

    def can_submit(self) -> bool:
        if not self.model.form.variant_label:
            return True
        return self.ready and not self._loading and bool(self.algorithm())

    # -------------------------------------------------------- command preview and dry run

    def _preview_request(self) -> tuple[RunConfig, dict[str, str]] | str:
        if self.bundle_installed is False and self.model.form.variant_label:
            return "# the command is resolved once the bundle is installed"
        if self.model.shown is None:
            return "# waiting for the parameters"
        if self.model.errors():
            return "# fix the marked fields to see the command"
        try:
            return self.config(), self.secret_env()
        except ConfigError as exc:
            return f"# {exc}"

    def _show_dry_run(self, plan: LaunchPreview) -> None:
        lines = ["# resolved by the daemon (dry run, nothing launched)", plan_text(plan), f"# in {plan.cwd}"]
        lines += [f"{key}={value}" for key, value in sorted(plan.env.items())]
        self.dry_run_output.setPlainText("\n".join(lines))
        self.dry_run_output.show()

    # -------------------------------------------------------- the bundle's install, trained runs

    def _after_submit(self, run_id: str, config: RunConfig) -> None:
        if self.bundle_installed is False and self.model.form.variant_label:
            self.picker.watch_install(self.link, run_id)

    def _list_trained(self) -> None:
        """Offer, under "Start from", the finished runs of this kind with a saved model (read off the
        GUI thread: it reads their manifests); runs that finish later arrive by :meth:`_run_updated`."""
        if not self.spec.capabilities.warm_start:
            return
        kind = self.worker_kind

        def trained(client: DaemonClient) -> list[str]:
            return [r.run_id for r in client.list_runs() if r.worker == kind and offers_trained_model(r)]

        self.link.call(trained, self.rows.offer_start, lambda _message: None)

    def _run_updated(self, run: RunRecord) -> None:
        if run.worker == self.worker_kind and run.state.terminal and offers_trained_model(run):
            self.rows.offer_start([run.run_id])
        if run.run_id == self.picker.install_run and run.state is not RunState.QUEUED:
            # The bundle is there (or failed): the run has left the queue. Read the variants now.
            self.picker.stop_install_watch(hide=True)
            if run.state is RunState.FAILED:
                self._show_error(run.reason)
            self.reload()

    def closeEvent(self, event: Any) -> None:
        self.picker.stop_install_watch()
        super().closeEvent(event)
