"""A gym_gui worker kind from outside gym_gui's tree: tabular Q-learning with epsilon-greedy exploration.

- ``params``: the parameters (alpha, gamma, epsilon, ...), their defaults and ranges; plain Python,
  shared by the plugin (which checks them) and the worker (which uses them).
- ``agent``: the Q-table and its update; numpy only.
- ``__main__``: the worker process the daemon starts; speaks to gym_gui through ``gym_gui_sdk`` only.
- ``plugin``: the ``WorkerPlugin`` gym_gui loads through the ``gym_gui.workers`` entry point; the
  only module that imports gym_gui.
"""
