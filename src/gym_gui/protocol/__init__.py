"""gRPC client of the trainer daemon and conversions between protocol messages and core records."""
