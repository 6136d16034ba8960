"""The reason a process's error output gives: never one of its warnings."""

from __future__ import annotations

from gym_gui_sdk.stderr import error_line, without_warnings

# What gym prints on its first env.seed() (issue 30: a killed script's run took its last line as its reason).
GYM_BANNER = [
    "/venv/lib/python3.11/site-packages/gym/core.py:172: DeprecationWarning: \x1b[33mWARN: Function "
    "`env.seed(seed)` is marked as deprecated and will be removed in the future.\x1b[0m",
    "  deprecation(",
]
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "ppo.py", line 3, in <module>',
    "    main()",
    "ValueError: learning rate must be positive",
]


def test_a_warning_and_the_source_line_under_it_are_never_the_reason() -> None:
    assert error_line(GYM_BANNER) == ""
    assert error_line([*TRACEBACK, *GYM_BANNER]) == "ValueError: learning rate must be positive"
    assert error_line([*TRACEBACK, "WARNING: the W&B run is offline", "\x1b[33mWARN: box bound\x1b[0m"]) == (
        "ValueError: learning rate must be positive"
    )


def test_argparses_error_line_is_the_reason_and_the_rest_is_kept() -> None:
    usage = ["usage: ppo.py [-h] [--seed SEED]", "ppo.py: error: unrecognized arguments: --bogus 1"]
    assert error_line([*usage, *GYM_BANNER, "  "]) == "ppo.py: error: unrecognized arguments: --bogus 1"
    assert without_warnings([*GYM_BANNER, *TRACEBACK, *GYM_BANNER]) == TRACEBACK
    # An indented line after anything but a warning is kept (a traceback's frames).
    assert without_warnings(["Fatal Python error: Segmentation fault", "", "  File x.py, line 1"]) == [
        "Fatal Python error: Segmentation fault",
        "",
        "  File x.py, line 1",
    ]
