"""The study view: an Optuna study's trials, history and importances, Train with best, optuna-dashboard."""
