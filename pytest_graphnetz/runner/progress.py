"""Live progress of a benchmark run, for pytest's terminal: triples done of the total, how many
were trained and how many came from the cache, the triple that just finished, the time spent
and an estimate of the time left.

Standard library only (the plugin imports it on every run that trains). :class:`RunProgress`
counts and formats; :class:`TerminalProgress` decides when a line is written: rewritten in place
on a terminal, else (a CI log) one line at most every ``interval`` seconds plus the last one.
Under ``-q`` a run says nothing until it has run ``QUIET_FOR`` seconds, then one line per
finished triple; :meth:`TerminalProgress.beat`, called every second by the plugin, adds a line
while one triple trains for long (``HEARTBEAT`` seconds without a line), so slow never looks
like hung.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# Under -q: a run shorter than this prints nothing (seconds).
QUIET_FOR = 5.0
# A line at least this often while a run is showing progress and no triple finishes (seconds).
HEARTBEAT = 30.0
TICK = 1.0   # how often the heartbeat's thread looks (seconds)


def duration(seconds: float) -> str:
    """``"0:42"``, ``"12:05"``, ``"1:02:05"``: minutes and seconds (hours when needed)."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def triple_counts(test: str, runs: list[dict[str, float]]) -> str:
    """``graphnetz: test_m.py::test_a: 30 triples (27 trained, 3 from cache) in 0:41``: what
    one test's ``runs`` (each with ``trained``, ``cached`` and ``seconds``) cost."""
    trained = sum(int(r.get("trained", 0)) for r in runs)
    cached = sum(int(r.get("cached", 0)) for r in runs)
    seconds = sum(float(r.get("seconds", 0.0)) for r in runs)
    return (f"graphnetz: {test}: {trained + cached} triples ({trained} trained, "
            f"{cached} from cache) in {duration(seconds)}")


@dataclass
class RunProgress:
    """Counts the triples of one ``run_benchmark`` call as they finish.

    ``total`` is the number of (task, model, seed) triples the run has (None when unknown).
    The time left is the mean wall-clock time per finished triple times the triples still to
    come: a guess, shown with ``~``, that is pessimistic when the rest comes from the cache.
    """

    total: int | None
    clock: Callable[[], float] = time.monotonic
    trained: int = 0
    cached: int = 0
    last: str = ""       # the triple that finished last
    current: str = ""    # the triple training now, when the run says (serial runs)
    started_at: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started_at = self.clock()

    @property
    def done(self) -> int:
        return self.trained + self.cached

    def start(self, task: str, model: str, seed: int) -> None:
        self.current = f"{task}/{model} seed {seed}"

    def update(self, task: str, model: str, seed: int, status: str) -> None:
        self.current = ""
        if status == "trained":
            self.trained += 1
        else:
            self.cached += 1
        self.last = f"{task}/{model} seed {seed}"

    def line(self) -> str:
        """``graphnetz: 12/30 triples (9 trained, 3 from cache) · now karate/GCN seed 5 ·
        0:42 elapsed, ~1:03 left`` (``last <triple>`` when the one training is not known)."""
        elapsed = self.clock() - self.started_at
        of = f"/{self.total}" if self.total is not None else ""
        parts = [f"graphnetz: {self.done}{of} triples ({self.trained} trained, "
                 f"{self.cached} from cache)"]
        if self.current:
            parts.append(f"now {self.current}")
        elif self.last:
            parts.append(f"last {self.last}")
        timing = f"{duration(elapsed)} elapsed"
        if self.total is not None and 0 < self.done < self.total:
            timing += f", ~{duration(elapsed / self.done * (self.total - self.done))} left"
        parts.append(timing)
        return " · ".join(parts)


class TerminalProgress:
    """Writes a :class:`RunProgress` to pytest's terminal reporter as triples finish.

    - ``write(line)`` puts a line of its own on the terminal; ``rewrite(line)`` replaces the
      current line in place (only used when ``tty``); ``end()`` closes a rewritten line.
    - On a terminal every update rewrites one line; elsewhere (CI logs, captured output) a line
      is written when the run starts, at most every ``interval`` seconds, and when it ends;
      ``every_triple`` (pytest ``-v``) writes one line per finished triple.
    - ``quiet_for`` (pytest ``-q``): nothing until the run has taken that many seconds, then
      one line per finished triple (never rewritten in place).
    - :meth:`beat`: a line when none was written for ``heartbeat`` seconds (a triple that
      trains for minutes), once the run shows progress at all.
    """

    def __init__(self, progress: RunProgress, *, write: Callable[[str], None],
                 rewrite: Callable[[str], None], end: Callable[[], None], tty: bool,
                 every_triple: bool = False, interval: float = 10.0,
                 quiet_for: float | None = None, heartbeat: float | None = None) -> None:
        self.progress = progress
        self._write, self._rewrite, self._end = write, rewrite, end
        self.quiet_for = quiet_for
        self.tty = tty and quiet_for is None
        self.every_triple, self.interval = every_triple, interval
        self.heartbeat = HEARTBEAT if heartbeat is None else heartbeat
        self._last_write = progress.clock()
        self._shown = -1  # the `done` count of the last line written (-1: none yet)
        if quiet_for is None:
            self._show(progress.line())

    def _speaking(self) -> bool:
        """Whether lines are written yet: always, but under -q only once the run is slow."""
        return self.quiet_for is None or \
            self.progress.clock() - self.progress.started_at >= self.quiet_for

    def beat_due(self) -> bool:
        """Whether :meth:`beat` would write: no line for ``heartbeat`` seconds."""
        return self._speaking() and \
            self.progress.clock() - self._last_write >= self.heartbeat

    def beat(self) -> None:
        """A heartbeat: the line again, so a long triple does not look like a hang."""
        self._last_write = self.progress.clock()
        self._show(self.progress.line())

    def start(self, task: str, model: str, seed: int) -> None:
        """A triple starts: shown in place on a terminal; a log waits for the next count."""
        self.progress.start(task, model, seed)
        if self.tty:
            self._show(self.progress.line())

    def update(self, task: str, model: str, seed: int, status: str) -> None:
        self.progress.update(task, model, seed, status)
        now = self.progress.clock()
        if self.quiet_for is not None:
            due = self._speaking()
        else:
            due = self.tty or self.every_triple or now - self._last_write >= self.interval
        if due:
            self._last_write = now
            self._show(self.progress.line())

    def finish(self) -> None:
        """The final line (kept on screen), whether the run completed or failed; under -q
        only after a run that showed progress."""
        if self.quiet_for is not None and self._shown < 0:
            return
        if self.tty or self._shown != self.progress.done:
            self._show(self.progress.line())
        if self.tty:
            self._end()

    def _show(self, line: str) -> None:
        self._shown = self.progress.done
        (self._rewrite if self.tty else self._write)(line)


@contextmanager
def heartbeat(beat: Callable[[], None]) -> Iterator[None]:
    """Within the block, a daemon thread calls ``beat`` every ``TICK`` seconds (a run's
    callbacks come only when a triple starts or ends: one that trains for minutes says
    nothing in between)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(TICK):
            beat()

    thread = threading.Thread(target=loop, name="graphnetz-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def live_progress(config: Any, tasks: Any, models: Any, seeds: Any, *,
                  worker: bool) -> TerminalProgress | None:
    """The live progress display of one run of a pytest session (``config``): under ``-q``,
    silent for a run shorter than ``QUIET_FOR`` seconds. None on an xdist ``worker`` (whose
    output nobody sees: the controller prints per-test counts) or without a terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or worker:
        return None

    def rewrite(line: str) -> None:
        reporter.ensure_newline()
        reporter.rewrite(line, erase=True)

    return TerminalProgress(
        RunProgress(_count_triples(tasks, models, seeds)), write=reporter.write_line,
        rewrite=rewrite, end=lambda: reporter.line(""), tty=bool(reporter.isatty),
        every_triple=config.get_verbosity() > 0,
        quiet_for=QUIET_FOR if config.get_verbosity() < 0 else None)


def _count_triples(tasks: Any, models: Any, seeds: Any) -> int | None:
    """How many (task, model, seed) triples ``run_benchmark`` will run (None: it will refuse
    the arguments itself, with its own message)."""
    from pytest_graphnetz.runner.tasks import resolve_tasks

    try:
        return len(resolve_tasks(tasks)) * len(models) * len(seeds)
    except (KeyError, TypeError, ValueError):
        return None
