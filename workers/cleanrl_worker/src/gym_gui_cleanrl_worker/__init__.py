"""The CleanRL worker of gym_gui: real CleanRL scripts on the analytics lane, inside the cleanrl bundle."""

# Lines the launcher prints on the script's stdout for the worker to pick up (never a CleanRL format).
MARKER = "[gym_gui] "
