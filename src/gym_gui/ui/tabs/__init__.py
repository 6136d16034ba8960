"""The tabs of a selected run: live and replay (telemetry lane), charts, TensorBoard, W&B, checkpoints (analytics lane)."""
