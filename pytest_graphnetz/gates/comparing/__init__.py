"""Comparing: a candidate report against a baseline report, cell by cell, without failing and
without writing. Pair (:mod:`.pairing`: shared seeds, the metric, the data/split refusal),
measure and decide at each look on the one decision path (:mod:`.cells`), apply the family
(Holm, the suite row: :mod:`.suite_row`), for fixed seeds and for adaptive ones (:mod:`.compare`,
:mod:`.schedule`, :mod:`.adaptive`), with the call's settings in one :class:`~.spec.GateSpec`.

It reads reports only: the baseline store and its refresh (:mod:`..refreshing`) call this
package and are never called from it (an import contract in pyproject.toml)."""
