"""The agent panes: what a step's payload says about the agent's reasoning, beside the environment view."""
