"""Reading a pytest run's terminal output in the tests: the ``graphnetz gates`` table."""

from __future__ import annotations

import re


def gates_table(output: str) -> str:
    """The gate table alone: from its header to the next ``====`` separator line.

    The failure messages also name verdicts, and under ``CI=true`` pytest prints them whole in
    the short test summary, so the table must be cut out, not just everything after it.
    """
    match = re.search(r"=+ graphnetz gates =+\n(.*?)(?:^=+|\Z)", output, re.S | re.M)
    return match.group(1) if match else ""
