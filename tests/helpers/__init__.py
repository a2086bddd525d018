"""Code the test files share, one module per thing it holds (tests/README.md, "Helpers");
the modules with fixtures reach every test through tests/conftest.py's ``pytest_plugins``."""
