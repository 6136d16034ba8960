"""Human play as a run: the environment stepped in-process, recorded like any worker (no Qt)."""
