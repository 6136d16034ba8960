"""Run forms: one generated form for every worker kind, a thin Qt view over a plain model.

- ``model``: the Qt-free model (``RunModel``) — a form's fields as plain values, shaped by the kind's
  ``FormSpec`` (the SDK's contract), their validation (field → message), ``to_config()``, and
  ``values()``/``restore()``/``from_values()`` for what the window remembers.
- ``sections``: Qt-free too — the sections a kind may declare (executor, tracking, GPU, checkpoints,
  warm start) as plain values.
- ``params``: Qt-free too — one ``Param`` per described parameter: its raw field content, its
  default, how typed text becomes a value (then the contract's validator judges it).
- ``widgets``: fields tied to the model (``bind``), one editor per parameter, invalid marks.
- ``rows``: the common rows and the declared sections' rows; ``tracking``: the W&B box.
- ``scripts``: the variant picker (CleanRL's scripts, the bundle install's progress).
- ``preview``: the command a run would execute, as the daemon resolves it (PreviewRun).
- ``base``: ``RunForm`` — submit through the daemon (a dry run shows its plan), remembered values.
- ``form``: ``GeneratedForm``, the one form; ``kinds``: ``form_for`` — the form of a kind.

This package imports nothing here, so ``model``, ``sections`` and ``params`` load without Qt.
"""
