"""The Arena: Run ▸ Arena… — operators side by side on shared seeds, and evaluation batches.

- ``model``: the Qt-free model — the setup checked, the lock-step of the panes, the scoreboard,
  a batch's box plot figures.
- ``picker``: the seats' operator choice (``gym-gui operators``' listing; unusable ones greyed).
- ``side_by_side``: the panes (one :class:`~gym_gui.play.seat.Seat` each, one comparison id),
  stepped lock-step, and the scoreboard.
- ``batch``: an :class:`~gym_gui.play.batch.EvaluationBatch` from the window: its table and box plot.
- ``view``: ``ArenaView``, the setup both share and the two parts as tabs.

This package imports nothing here, so ``model`` loads without Qt.
"""
