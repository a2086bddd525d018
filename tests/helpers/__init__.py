"""Code that a unit's fast tests (tests/fast/) and slow tests (tests/slow/) both use."""
