"""``graphnetz bisect`` (layer 7, the command line): which commit made a gate regress.

- :mod:`.probes`: one probe per commit, a pytest session in a git worktree of its own, cold or
  in the warm server; nothing left behind after a signal;
- :mod:`.search`: the search over the commit range at real noise (seeds doubled until a probe
  decides);
- :mod:`.probe_server`: the warm interpreter the probes fork from (standard library only);
- :mod:`.findings`: what a search finds (each probe's three-valued evidence, a cell's finding).
"""
