"""The random-action baseline worker of gym_gui: the simplest complete worker to read."""
