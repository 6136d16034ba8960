"""gym_gui: a desktop research cockpit for reinforcement learning."""

from __future__ import annotations

import os

__version__ = "0.1.0"

# gym_gui's processes fork only to exec at once (workers, TensorBoard, QtWebEngine's helper
# processes), never to go on running Python. gRPC's fork handlers are for the other case: beside a
# live channel they run in each such child between fork and exec, where QtWebEngine's launcher has
# closed the descriptors gRPC's pollers wait on. They are turned off here, before any gym_gui
# module imports grpc (gRPC reads this once, when it is imported); a user's own setting wins.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
