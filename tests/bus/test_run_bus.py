"""RunBus: credit windows, coalescing to the latest step, STARVED/RESUMED, and always-delivered events."""

from __future__ import annotations

import threading

from gym_gui.bus.run_bus import RESUMED, STARVED, STEPS, RunBus


def drain(sub) -> list[tuple[str, object]]:  # type: ignore[no-untyped-def]
    out = []
    while (event := sub.get(timeout=0)) is not None:
        out.append((event.kind, event.payload))
    return out


def test_steps_within_credits_are_delivered_in_order() -> None:
    bus = RunBus()
    sub = bus.subscribe("run", credits=3)
    for i in range(3):
        bus.publish("run", STEPS, i)
    assert drain(sub) == [(STEPS, 0), (STEPS, 1), (STEPS, 2)]
    assert sub.credits == 0 and not sub.starved


def test_without_credits_the_latest_step_wins_and_starved_is_said_once() -> None:
    bus = RunBus()
    sub = bus.subscribe("run", credits=1)
    for i in range(5):
        bus.publish("run", STEPS, i)
    assert drain(sub) == [(STEPS, 0), (STARVED, None)]
    assert sub.starved
    sub.grant(2)
    events = []
    while (event := sub.get(timeout=0)) is not None:
        events.append(event)
    assert [(e.kind, e.payload) for e in events] == [(STEPS, 4), (RESUMED, None)]
    assert events[1].coalesced == 3  # steps 1, 2 and 3 were replaced
    assert sub.credits == 1 and not sub.starved


def test_episodes_metrics_and_states_are_delivered_whatever_the_credits() -> None:
    bus = RunBus()
    sub = bus.subscribe("run", credits=0)
    bus.publish("run", STEPS, 0)
    bus.publish("run", "episode", "e0")
    bus.publish("run", "metrics", "m0")
    bus.publish("run", STEPS, 1)
    bus.publish("run", "state", "COMPLETED")
    assert drain(sub) == [(STARVED, None), ("episode", "e0"), ("metrics", "m0"), ("state", "COMPLETED")]


def test_subscriptions_are_per_run_and_closing_removes_them() -> None:
    bus = RunBus()
    a = bus.subscribe("a", credits=10)
    b = bus.subscribe("b", credits=10)
    bus.publish("a", "episode", 1)
    assert drain(a) == [("episode", 1)]
    assert drain(b) == []
    a.close()
    assert bus.subscriber_count("a") == 0
    bus.publish("a", "episode", 2)
    assert a.get(timeout=0) is None


def test_close_run_wakes_a_waiting_viewer() -> None:
    bus = RunBus()
    sub = bus.subscribe("run")
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(sub.get(timeout=30)))
    waiter.start()
    bus.close_run("run")
    waiter.join(10)
    assert not waiter.is_alive()
    assert got == [None] and sub.closed


def test_a_slow_viewer_never_slows_the_publisher() -> None:
    bus = RunBus()
    bus.subscribe("run", credits=0)
    for i in range(100_000):
        bus.publish("run", STEPS, i)  # returns at once: nothing queues up behind a viewer
    sub = bus.subscribe("run", credits=0)
    bus.publish("run", STEPS, "x")
    assert drain(sub) == [(STARVED, None)]
