"""Refreshing: the baseline store (:mod:`.baselines`: files, handles, locks, anchors), its
replicates (:mod:`.replicates`) and the ratchet that decides whether a refresh may write
(:mod:`.ratchet`). The ratchet judges a candidate through comparing
(:mod:`pytest_graphnetz.gates.comparing`), which never imports this package."""
