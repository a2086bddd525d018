"""Verdicts: what a gate says about each cell, and how it reads.

One constructor per kind of verdict (:class:`~.values.CellVerdict` for the comparison gates,
fixed or adaptive seeds, :class:`~.values.WidthVerdict` for ``assert_ci_width``), one pass rule
per gate (:data:`~.rules.PASSES`, :func:`~.rules.failed_verdict`), one δ default
(:func:`~.rules.default_min_effect`), the refusal (:class:`~.values.GateRefusal`), and the
formatting every message, table row and summary shares.

One module per job, imports pointing down (contract in pyproject.toml):

- :mod:`.values`: the verdict values and their messages and table rows (``CellVerdict``,
  ``WidthVerdict``, ``UnpairedCell``, ``GateRefusal``);
- :mod:`.guidance`: what a row rules out and what comes next (``Guidance``), and where a cell
  was decided on the schedule (``LookNote``, ``Stop``);
- :mod:`.rules`: what each gate lets through and the δ it judges at when none is given;
- :mod:`.formatting`: the spellings every verdict shares (intervals, seed lists, metric labels,
  the gate table) and the described values a row shows.
"""
