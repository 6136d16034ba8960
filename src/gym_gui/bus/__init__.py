"""Publish/subscribe of run events for viewers (lossy by design, with credit windows)."""
