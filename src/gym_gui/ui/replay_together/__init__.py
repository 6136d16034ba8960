"""Replay together: the runs of one comparison (or 2–4 runs chosen in the runs table) replayed side by
side, one episode number and one step for all.

- ``model``: the Qt-free reading — each run's steps through the Replay tab's model, at one shared step.
- ``view``: ``ReplayTogetherView``, the panes, the episode choice and one transport; it calls the model
  off the GUI thread.

This package imports nothing here, so ``model`` loads without Qt.
"""
