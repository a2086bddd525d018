"""Tune, then confirm: a hyperparameter search whose winner is gated on seeds the search never
touched. :mod:`.search` runs it (:func:`~.search.tune`, :func:`~.search.grid`); :mod:`.trials`
is what it leaves in the confirmed report and the checks the gate's pairing makes on it."""
