"""A bound on the bytes several telemetry writers hold together: a daemon's memory across its runs."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

# Bytes of step rows the writers of one daemon's runs may hold together (a ByteBudget they share):
# what bounds the memory a flood of runs takes, however many runs flood at once.
MAX_INFLIGHT_BYTES = 32 * 1024 * 1024


class ByteBudget:
    """Bytes that the writers sharing it may hold, together: a daemon's bound across its runs (each
    writer also holds at most its own ``max_pending_bytes``).

    Bytes are given in the order they were asked for, so a large batch is never passed for ever by
    small ones; a taker alone always gets what it asks, however much (as a writer's own bound lets
    one batch in).
    """

    def __init__(self, limit: int = MAX_INFLIGHT_BYTES) -> None:
        if limit < 1:
            raise ValueError(f"a byte budget must be at least 1 byte, got {limit}")
        self.limit = limit
        self._used = 0
        self._turns: deque[object] = deque()  # who asks, in order
        self._cv = threading.Condition()

    @property
    def used(self) -> int:
        """The bytes taken and not given back."""
        with self._cv:
            return self._used

    def take(self, size: int, give_up: Callable[[], bool]) -> bool:
        """Wait until ``size`` more bytes fit, after those who asked earlier, and take them.

        Returns:
            True once taken; False, having taken nothing, when ``give_up()`` is true at a wake-up
            (a give back, or :meth:`wake`).
        """
        turn = object()
        with self._cv:
            self._turns.append(turn)
            try:
                while not (self._turns[0] is turn and (self._used == 0 or self._used + size <= self.limit)):
                    if give_up():
                        return False
                    self._cv.wait()
                self._used += size
                return True
            finally:
                self._turns.remove(turn)
                self._cv.notify_all()  # the next in line may fit as well

    def give(self, size: int) -> None:
        """Give back ``size`` bytes taken earlier."""
        if size:
            with self._cv:
                self._used -= size
                self._cv.notify_all()

    def wake(self) -> None:
        """Have every waiter look at its ``give_up`` again (its writer failed or closed)."""
        with self._cv:
            self._cv.notify_all()
