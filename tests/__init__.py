"""Test package (a package so ``python -m tests.mockserver`` and ``tests.*`` imports work)."""
