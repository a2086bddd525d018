"""Calibration: what δ a cell's seeds can resolve, measured from an innocent change.

A gate's NOT WORSE needs the one-sided lower bound of the paired Δ above −δ, and its REGRESSED
needs a drop of δ to stand out of the paired noise: whether the configured seeds can do both
depends on the spread of paired differences *when nothing changed*, which only training tells.
:func:`~.salted_run.calibrate_reports` measures it: the baseline models trained a second time under
*salted* seeds (:class:`~.salting.SaltedFactory`: every random draw of initialisation and
training moves, the data and splits do not) give per seed an innocent paired difference; their
sd is the noise any change of the model must stand out of.

From that sd the planning functions of :mod:`pytest_graphnetz.stats.planning` give per cell the
smallest δ the seeds resolve (NOT WORSE on no change and REGRESSED on a drop of δ, each with
probability ≥ ``power``) and the seeds a chosen δ needs. The result is stored beside the
baseline (``baselines/<module>/<test>.calibration.json``), and
:func:`~.annotation.resolution_note` lets a gate say when its δ is finer than its seeds resolve.

One module per job, imports pointing down (contract in pyproject.toml):

- :mod:`.figure`: the per-budget figure of ``graphnetz calibrate -o``;
- :mod:`.salted_run`: train and salted rerun (``calibrate``), the measurement from the two reports
  (``calibrate_reports``), and writing one test's calibrations (``write_calibrations``);
- :mod:`.annotation`: what a gate says with a calibration (its rows' notes, the δ
  ``min_effect="resolvable"`` gates at);
- :mod:`.terminal`: the terminal rows of ``--graphnetz-calibrate``;
- :mod:`.store`: the JSON file beside a baseline (schema, read, write, where it lives);
- :mod:`.salting`: the innocent change (salted seeds, factories and command tasks);
- :mod:`.resolution`: the measured cells and the planning arithmetic (what δ ``n`` seeds
  resolve, the seeds a δ needs).
"""
