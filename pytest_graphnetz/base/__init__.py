"""Layer 1 of 7 (bottom): the vocabulary every layer shares.

Imports only the standard library and numpy (scipy lazily, in :mod:`.metrics`); every layer may
import it.

- :mod:`.outcomes`: what a model did on each test example (``TestOutcomes``);
- :mod:`.metrics`: the metrics by name, their direction and how to compute them;
- :mod:`.seedspec`: seed counts and ranges as users write them;
- :mod:`.text`: number, interval and seed-list spellings and the terminal's widths.
"""
