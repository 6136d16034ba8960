"""The sweep form: Run ▸ Start sweep… — a base run from the generated run form, then the search.

- ``model``: the Qt-free model (``SweepModel``) — the space per parameter of the base run's form
  spec, the objective, sampler, pruner, trials, parallel and seeds as plain values, their validation
  (field → message) and ``to_spec()``, the :class:`SweepSpec` `gym-gui sweep start` takes
  (``spec_text``: its file).
- ``space``: the space's editor, a row per sweepable parameter, tied to the model's entries.
- ``view``: ``SweepDialog`` — the embedded run form, the search fields, Start (through the daemon)
  and Save spec….

This package imports nothing here, so ``model`` loads without Qt.
"""
