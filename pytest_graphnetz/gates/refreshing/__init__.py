"""Refreshing: the baseline store (:mod:`.baselines`: files, handles, locks, anchors), its
replicates (:mod:`.replicates`) and the ratchet that decides whether a refresh may write
(:mod:`.ratchet`), and what a gate does when it writes its baseline (:mod:`.update`). The
ratchet judges a candidate through comparing
(:mod:`pytest_graphnetz.gates.comparing`), which never imports this package."""
