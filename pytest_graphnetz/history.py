"""Old path of :mod:`.epochs` (the per-epoch record), kept while command tasks import it; new
code imports :mod:`.epochs`."""

from .epochs import History, MetricSpec

__all__ = ["History", "MetricSpec"]
