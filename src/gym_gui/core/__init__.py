"""The Qt-free, gRPC-free model of gym_gui: ids, configs, records, run states and catalogs."""
