"""Training forms: each a thin Qt view over a plain parameter model.

- ``model``: the Qt-free model — a form's fields as plain values (``CleanRLModel``,
  ``WorkerModel``, ``TrackingModel``), their validation (field → message), ``to_config()``, and
  ``values()``/``restore()``/``from_values()`` for what the window remembers.
- ``params``: Qt-free too — one ``Param`` per worker parameter: its raw field content, its
  default, how typed text becomes a value.
- ``widgets``: fields tied to the model (``bind``), one editor per parameter, invalid marks.
- ``scripts``: the script picker (CleanRL's scripts, the bundle install's progress).
- ``tracking``: TensorBoard, Weights & Biases and video capture.
- ``preview``: the command a run would execute, as the daemon resolves it (PreviewRun).
- ``base``: ``RunForm`` — submit through the daemon (a dry run shows its plan), remembered values.
- ``cleanrl``, ``worker``: the two forms; ``kinds``: ``form_for`` — the form a worker kind asks for.

This package imports nothing here, so ``model`` and ``params`` load without Qt.
"""
