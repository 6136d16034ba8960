"""The runs dock: the table of every run (``table``), its model (``model``), its row actions (``actions``),
how its cells are drawn (``cells``) and the log drawer of the selected run (``log_drawer``)."""
