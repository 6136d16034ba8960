"""The re-run rules on their own: how two package sets differ, and when two runs' returns are identical."""

from __future__ import annotations

import math

from gym_gui.core.rerun import ABSENT, PackageChange, compare_returns, package_changes


def test_package_sets_differ_by_name_as_pip_compares_them() -> None:
    recorded = [
        "# Editable install with no version control (gym-gui-sdk==0.1.0)",
        "-e /src/sdk",
        "numpy==1.26.4",
        "Torch==2.13.0+cpu",
        "typing_extensions==4.12.0",
        "old-helper==0.3",
        "tyro @ file:///wheels/tyro-0.8.whl",
    ]
    now = [
        "-e /src/sdk",
        "numpy==1.26.4",
        "torch==2.12.0+cpu",
        "typing-extensions==4.12.0",
        "new-helper==1.0",
        "tyro @ file:///wheels/tyro-0.9.whl",
    ]
    assert package_changes(recorded, now) == [
        PackageChange("new-helper", ABSENT, "1.0"),
        PackageChange("old-helper", "0.3", ABSENT),
        PackageChange("torch", "2.13.0+cpu", "2.12.0+cpu"),
        PackageChange("tyro", "@ file:///wheels/tyro-0.8.whl", "@ file:///wheels/tyro-0.9.whl"),
    ]
    assert package_changes(now, now) == []
    assert PackageChange("torch", "2.13.0", "2.12.0").text() == "torch 2.13.0 → 2.12.0"


def test_returns_are_identical_only_when_every_episode_matches() -> None:
    same = compare_returns([10.0, 21.0, 35.0], [10.0, 21.0, 35.0])
    assert same.identical and same.text() == "identical: 3 episodic returns match"

    differ = compare_returns([10.0, 21.0, 19.0, 8.0], [10.0, 21.0, 21.0, 8.0])
    assert not differ.identical and differ.first_difference == 2
    assert differ.text() == "differ: first at episode 2: 19.0 vs 21.0"

    shorter = compare_returns([1.0, 2.0, 3.0], [1.0, 2.0])
    assert shorter.first_difference == 2
    assert shorter.text() == "differ: the re-run has 2 episodic returns, the original 3 (the first 2 match)"

    assert compare_returns([math.nan, 1.0], [math.nan, 1.0]).identical  # a diverged return repeats too
    assert compare_returns([], []).text() == "identical: 0 episodic returns match"
