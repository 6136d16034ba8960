"""The trainer daemon: gRPC server, supervisor, executors and the run services."""
