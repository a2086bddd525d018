"""Layer 7 of 7 (top): the ``graphnetz`` command line.

May import every layer below (plugin, gates, runner, report, stats, base), each lazily where a
subcommand needs it, so ``graphnetz --help`` stays cheap. Nothing in the package imports it.

- :mod:`.main`: the argument parser and the entry point (``graphnetz = ...cli.main:main``);
- :mod:`.subcommands`: show, compare, plot, markdown, latex, refresh, calibrate, prune, tune;
- :mod:`.bisection`: ``graphnetz bisect``, the search over commits and its probes;
- :mod:`.history`: ``graphnetz history``, the cross-commit record, its page and the test-set
  reuse ledger;
- :mod:`.nextlook`: what an adaptive run's next look will train, read from a session's JSON.
"""
