"""Test caches importable by dotted name (tests put tests/data on sys.path)."""
