"""Helpers shared by several test modules (importable as ``support``: pytest
puts tests/ on sys.path, since tests/ is not a package)."""
