"""``python -m pytest_graphnetz.cli``: the ``graphnetz`` command, as the console script runs it."""

import sys

from pytest_graphnetz.cli.main import main

sys.exit(main())
