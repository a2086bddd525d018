"""``graphnetz history`` (layer 7, the command line): a gate's cells across commits.

- :mod:`.page`: the HTML page (one figure per cell, the drift and the ledger);
- :mod:`.svg`: the figures of that page;
- :mod:`.trend`: the one read of the committed baselines' history (:class:`CommitHistory`),
  the drift check and the terminal table;
- :mod:`.ledger`: how many gate reads each test split has had, against its reuse budget.
"""
