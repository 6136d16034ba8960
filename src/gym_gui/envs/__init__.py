"""The gymnasium adapter: resolves catalog ids against what is installed and makes environments."""
