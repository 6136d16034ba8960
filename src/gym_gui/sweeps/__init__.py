"""Sweeps: Optuna studies whose trials are gym_gui runs, and reading any Optuna study."""
