"""The Live tab against a real daemon: table, grid frames, return chart, the env's own frame rate, STARVED, banner."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import RunRecord, StepBatch, StepRow
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.tabs.frame_pacer import FRAME_SPACING_SHARE, MAX_PLAYBACK_DELAY, FramePacer
from gym_gui.ui.tabs.live import LiveTab
from gym_gui.ui.tabs.live_steps import StepTableModel

BANNER = "This worker streams metrics, not steps: see the Charts tab."


def _random_run(client: DaemonClient, **telemetry: object) -> RunRecord:
    """A random-worker FrozenLake run of far more episodes than a test watches (cancelled by the fixture)."""
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": "FrozenLake-v1",
            "seed": 0,
            "budget": {"episodes": 10_000_000},
            "telemetry": telemetry,
        }
    )
    record, _token = client.submit(config)
    return client.get_run(record.run_id).record


@pytest.fixture
def tab(qtbot: QtBot, link: DaemonLink) -> Iterator[LiveTab]:
    tab = LiveTab(link)
    qtbot.addWidget(tab)
    tab.resize(1000, 700)
    tab.show()
    yield tab
    tab.detach()


def test_step_table_model_is_a_bounded_ring(qtmodeltester: object) -> None:
    model = StepTableModel(capacity=5)
    qtmodeltester.check(model)  # type: ignore[attr-defined]
    model.append_rows([(0, i, "1", 0.0, False, False, "{}") for i in range(3)])
    model.append_rows([(0, i, "2", 1.0, i == 5, False, "{}") for i in range(3, 6)])
    assert model.rowCount() == 5
    assert [model.row(r)[1] for r in range(5)] == [1, 2, 3, 4, 5]
    # A batch larger than the ring keeps its newest rows only.
    model.append_rows([(1, i, "3", 0.5, False, True, "{}") for i in range(12)])
    assert [model.row(r)[1] for r in range(5)] == [7, 8, 9, 10, 11]
    assert model.data(model.index(4, 5)) == "yes"
    assert model.headerData(6, pytest.importorskip("PySide6.QtCore").Qt.Orientation.Horizontal) == "info"
    qtmodeltester.check(model)  # type: ignore[attr-defined]


def test_live_tab_follows_a_random_run(qtbot: QtBot, client: DaemonClient, tab: LiveTab) -> None:
    run = _random_run(client)
    start = time.monotonic()
    tab.attach(run)

    # Enough frames that a throttle drawing every grid it gets would show far beyond 30 per second.
    qtbot.waitUntil(lambda: tab.frames_drawn >= 45, timeout=60_000)
    frames = tab.frames_drawn
    elapsed = time.monotonic() - start
    assert frames <= 31 * elapsed + 2, f"{frames} frames drawn in {elapsed:.2f} s"
    # The stream outruns the eye: far more steps reached the tab than frames were drawn.
    assert tab.frames_offered >= frames

    qtbot.waitUntil(lambda: tab.chart_points >= 20 and tab.model.rowCount() >= 100, timeout=30_000)
    assert tab.steps_seen >= tab.model.rowCount()
    assert tab.model.rowCount() <= tab.model.capacity
    assert tab.episodes_seen >= 1
    # Rows come in stream order; the newest step of an episode follows the one before it.
    episode, step, action, *_ = tab.model.row(tab.model.rowCount() - 1)
    assert episode >= 0 and step >= 0 and action in {"0", "1", "2", "3"}
    assert run.run_id in tab.status.text()
    assert not tab.banner.isVisible()

    tab.detach()
    assert tab.subscription is None
    assert tab.model.rowCount() == 0


def test_starved_badge_while_the_view_does_not_consume(
    qtbot: QtBot, client: DaemonClient, tab: LiveTab
) -> None:
    run = _random_run(client)
    tab.attach(run)
    qtbot.waitUntil(lambda: tab.batches_taken >= 1, timeout=60_000)

    tab.pause_consuming()
    # The credit window runs dry and the daemon coalesces: STARVED, shown as a visible badge.
    qtbot.waitUntil(lambda: tab.starved, timeout=30_000)
    assert tab.starved_badge.isVisible()
    taken = tab.batches_taken
    # Paused, the tab takes nothing, however long the stream runs.
    qtbot.waitUntil(lambda: tab.episodes_seen >= 50, timeout=30_000)
    assert tab.batches_taken == taken

    badge_at_resume: list[bool] = []

    def resumed(starved: bool) -> bool:
        # Checked as RESUMED is handled: the stream may starve this view again right after.
        badge_at_resume.append(tab.starved_badge.isVisible())
        return not starved

    with qtbot.waitSignal(tab.starved_changed, timeout=30_000, check_params_cb=resumed):
        tab.resume_consuming()
    assert badge_at_resume[-1] is False
    qtbot.waitUntil(lambda: tab.batches_taken > taken, timeout=30_000)


def test_analytics_banner_subscribes_to_no_steps(qtbot: QtBot, client: DaemonClient, tab: LiveTab) -> None:
    tab.set_banner(BANNER)
    run = _random_run(client)
    tab.attach(run)
    assert tab.banner.isVisible()
    assert tab.banner.text() == BANNER == tab.banner_text
    assert tab.subscription is None
    assert not tab.body.isVisible()

    # The run's state still shows, from the run table's updates.
    info = client.get_run(run.run_id).record
    tab.run_changed(info)
    assert info.state in tab.status.text()

    # Clearing the banner switches an attached tab back to streaming steps.
    tab.set_banner("")
    assert not tab.banner.isVisible()
    qtbot.waitUntil(lambda: tab.steps_seen > 0, timeout=60_000)


def payload(row: StepRow | None) -> bytes | None:
    """The render payload of a step the pacer hands out."""
    return None if row is None else row[8]


def test_frame_pacer_plays_a_batch_at_the_pace_of_its_steps() -> None:
    # 30 steps 10 ms apart, each with a payload, arriving 50 ms after the last one happened.
    batch = StepBatch(
        [(0, i, 0.0, False, False, "0", "0", "{}", b"{%d}" % i, 1000.0 + i * 0.01) for i in range(30)]
    )
    pacer = FramePacer()
    kept = pacer.add(batch, arrived_wall=1000.29 + 0.05, arrived_mono=50.0)
    # A payload every 30 ms (none closer than FRAME_SPACING), plus the newest one.
    assert kept == len(pacer) == 11
    # The oldest kept payload arrived 0.34 s after its step: it is due at once, and the others
    # follow at the pace of their steps, the newest 0.29 s later.
    assert pacer.delay == pytest.approx(0.34)
    assert pacer.next_due() == pytest.approx(50.0)
    assert payload(pacer.pop_due(50.0)) == b"{0}"
    assert payload(pacer.pop_due(50.1)) == b"{9}"
    assert pacer.pop_due(50.1) is None
    assert payload(pacer.pop_due(50.3)) == b"{29}"
    assert len(pacer) == 0

    # A batch far behind plays no more than MAX_PLAYBACK_DELAY late: what is older is skipped.
    pacer.add(batch, arrived_wall=1010.0, arrived_mono=60.0)
    assert pacer.delay == MAX_PLAYBACK_DELAY
    assert payload(pacer.pop_due(60.0)) == b"{29}"

    # Batches without payloads queue nothing.
    assert pacer.add(StepBatch([(0, 0, 0.0, False, False, "0", "0", "{}", None, 1.0)]), 2.0, 70.0) == 0
    assert pacer.next_due() is None


def test_the_view_draws_at_the_env_s_own_rate(qtbot: QtBot, client: DaemonClient, tab: LiveTab) -> None:
    # Runs of the human kind: the daemon launches nothing, and the tab reads the rate from the env id.
    lander, _ = client.submit(
        parse_run_config({"worker": "human", "env_id": "LunarLander-v3", "budget": {"episodes": 1}})
    )
    lake, _ = client.submit(
        parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}})
    )
    try:
        tab.attach(lander)
        # LunarLander declares metadata["render_fps"] 50: the view draws up to 50 a second, and the
        # pacer keeps payloads a little closer than a draw apart.
        assert tab.draw_fps == tab.env_view.max_fps == 50.0
        assert tab._pacer.spacing == pytest.approx(FRAME_SPACING_SHARE / 50.0)
        tab.attach(lake)
        assert tab.draw_fps == 4.0  # toy text: 4 a second
        assert tab._pacer.spacing == pytest.approx(FRAME_SPACING_SHARE / 4.0)
        tab.detach()
        tab.attach(dataclasses.replace(lake, env_id=""))
        assert tab.draw_fps == 30.0  # no env to ask: the default
    finally:
        for run in (lander, lake):
            client.cancel(run.run_id)


def test_frame_pacer_keeps_payloads_closer_for_a_faster_view() -> None:
    # The same 30 steps 10 ms apart: at 60 draws a second a payload every 20 ms is kept (at 30, every 30 ms).
    batch = StepBatch(
        [(0, i, 0.0, False, False, "0", "0", "{}", b"{%d}" % i, 1000.0 + i * 0.01) for i in range(30)]
    )
    assert FramePacer(fps=30.0).add(batch, 1000.3, 50.0) == 11
    pacer = FramePacer()
    pacer.set_fps(60.0)
    assert pacer.add(batch, 1000.3, 50.0) == 16


def test_a_finished_run_shows_its_stored_returns(qtbot: QtBot, client: DaemonClient, tab: LiveTab) -> None:
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": "FrozenLake-v1",
            "seed": 0,
            "budget": {"episodes": 40},
        }
    )
    record, _token = client.submit(config)
    assert client.wait_for_end(record.run_id, 60).state.value == "COMPLETED"

    tab.attach(client.get_run(record.run_id).record)
    # Nothing streams any more: the chart is back-filled from the run's storage.
    qtbot.waitUntil(lambda: tab.chart_points == 40, timeout=30_000)
    assert "COMPLETED" in tab.status.text()
    assert tab.steps_seen == 0
