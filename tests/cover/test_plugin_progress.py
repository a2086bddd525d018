"""Live progress while triples train: counts, the last triple, elapsed and time left; quiet
under ``-q``; per-test counts on the xdist controller. Real pytest sessions (pytester)."""

from __future__ import annotations

import re

import pytest

import pytest_graphnetz.runner.progress as progress_module
from pytest_graphnetz.runner.progress import RunProgress, TerminalProgress, duration

# In-process pytester runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
from pathlib import Path

import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers import tiny
from tests.helpers.sessions import live_lines


def test_progress_shows_counts_of_the_total_and_what_came_from_the_cache(project):
    result = project.runpytest("--graphnetz-seeds=3")
    result.assert_outcomes(passed=1)
    lines = live_lines(result.stdout.str())
    assert lines[0] == (0, 3, 0, 0)      # as soon as the run starts
    assert lines[-1] == (3, 3, 3, 0)     # and when it ends
    assert re.search(r"last tiny/GCN seed 2 · \d+:\d\d elapsed", result.stdout.str())
    again = project.runpytest("--graphnetz-seeds=3")
    assert live_lines(again.stdout.str())[-1] == (3, 3, 0, 3)


def test_verbose_prints_every_triple_with_the_time_left(project):
    result = project.runpytest("-v", "--graphnetz-seeds=3")
    result.assert_outcomes(passed=1)
    assert live_lines(result.stdout.str()) == [(0, 3, 0, 0), (1, 3, 1, 0), (2, 3, 2, 0),
                                               (3, 3, 3, 0)]
    assert len(re.findall(r", ~\d+:\d\d left", result.stdout.str())) == 2  # after 1 and 2


def test_quiet_under_q_for_a_short_run(project, monkeypatch):
    monkeypatch.setattr(progress_module, "QUIET_FOR", 1e9)   # every run is short
    result = project.runpytest("-q", "--graphnetz-seeds=3")
    result.assert_outcomes(passed=1)
    assert "graphnetz: " not in result.stdout.str()


SLOW = '''
import time

from scratch_tiny import gcn, tiny_csbm, tiny_task

import pytest_graphnetz.runner.progress as progress


def slow(root, *, seed):
    # a triple that lasts until the heartbeat has spoken (a minute at most)
    deadline = time.monotonic() + 60
    while not getattr(progress, "beaten", False) and time.monotonic() < deadline:
        time.sleep(0.01)
    return tiny_csbm(root, seed=seed)


def test_trains(graphnetz_run):
    graphnetz_run({"tiny": tiny_task(epochs=2, loader=slow)}, {"GCN": gcn})
    print("the test's own output")
    assert False, "fails, so that pytest shows the test's captured output"
'''


def test_a_long_run_under_q_shows_progress_on_the_terminal_only(project, monkeypatch):
    """Under -q, a run past QUIET_FOR writes a line per finished triple, and a heartbeat while
    one triple takes long; on the terminal, never in the test's captured output."""
    monkeypatch.setattr(progress_module, "QUIET_FOR", 0.0)
    monkeypatch.setattr(progress_module, "HEARTBEAT", 0.0)
    monkeypatch.setattr(progress_module, "TICK", 0.01)
    beat = TerminalProgress.beat

    def beat_and_tell(self):
        beat(self)
        progress_module.beaten = True

    monkeypatch.setattr(TerminalProgress, "beat", beat_and_tell)
    monkeypatch.setattr(progress_module, "beaten", False, raising=False)
    project.makepyfile(test_p=SLOW)
    result = project.runpytest("-q", "--graphnetz-seeds=2")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    terminal, captured = out.split("Captured stdout call")
    assert "the test's own output" in captured and "graphnetz: " not in captured
    # a heartbeat while the first triple trains (it names that triple once one has started)
    heartbeats = re.findall(r"graphnetz: 0/2 triples \(0 trained, 0 from cache\) · (?:now|\d)",
                            terminal)
    assert heartbeats, terminal
    # each finished triple has its line (heartbeats, every tick here, repeat the count)
    assert sorted({line[:2] for line in live_lines(terminal)}) == [(0, 2), (1, 2), (2, 2)]
    assert live_lines(terminal)[-1] == (2, 2, 2, 0)


def test_quiet_progress_waits_then_writes_each_triple_and_beats():
    clock, lines = Clock(), []
    live = TerminalProgress(RunProgress(total=3, clock=clock), write=lines.append,
                            rewrite=pytest.fail, end=pytest.fail, tty=True, quiet_for=5.0,
                            heartbeat=30.0)
    clock.now += 2.0
    live.update("t", "m", 0, "trained")
    assert lines == [] and not live.beat_due()   # a short run says nothing
    clock.now += 4.0
    live.update("t", "m", 1, "trained")           # past 5 s: a line per finished triple
    assert [line.split(" triples")[0] for line in lines] == ["graphnetz: 2/3"]
    clock.now += 29.0
    assert not live.beat_due()
    clock.now += 1.0
    assert live.beat_due()                        # 30 s without a line: a heartbeat
    live.beat()
    live.update("t", "m", 2, "cached")
    live.finish()
    assert [line.split(" triples")[0] for line in lines] == [
        "graphnetz: 2/3", "graphnetz: 2/3", "graphnetz: 3/3"]
    silent: list[str] = []
    short = TerminalProgress(RunProgress(total=1, clock=clock), write=silent.append,
                             rewrite=pytest.fail, end=pytest.fail, tty=False, quiet_for=5.0)
    short.update("t", "m", 0, "trained")
    short.finish()
    assert silent == []


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_time_left_is_the_mean_time_per_triple_times_the_triples_left():
    clock = Clock()
    progress = RunProgress(total=10, clock=clock)
    clock.now += 8.0
    progress.update("karate", "GCN", 0, "trained")
    progress.update("karate", "GCN", 1, "cached")
    assert progress.line() == ("graphnetz: 2/10 triples (1 trained, 1 from cache) · "
                               "last karate/GCN seed 1 · 0:08 elapsed, ~0:32 left")


def test_a_log_gets_a_line_at_most_every_interval_and_the_last_one():
    clock, lines = Clock(), []
    live = TerminalProgress(RunProgress(total=4, clock=clock), write=lines.append,
                            rewrite=pytest.fail, end=pytest.fail, tty=False, interval=10.0)
    for seed, step in enumerate((3.0, 3.0, 5.0, 1.0)):
        clock.now += step
        live.update("t", "m", seed, "trained")
    live.finish()
    assert [line.split(" triples")[0] for line in lines] == [
        "graphnetz: 0/4", "graphnetz: 3/4", "graphnetz: 4/4"]


def test_a_terminal_line_is_rewritten_in_place():
    written, ended = [], []
    live = TerminalProgress(RunProgress(total=2), write=pytest.fail, rewrite=written.append,
                            end=lambda: ended.append(True), tty=True)
    live.update("t", "m", 0, "trained")
    live.update("t", "m", 1, "cached")
    live.finish()
    assert len(written) == 4 and ended == [True]
    assert written[-1].startswith("graphnetz: 2/2 triples (1 trained, 1 from cache)")


@pytest.mark.parametrize("seconds, text", [(0, "0:00"), (59.6, "1:00"), (605, "10:05"),
                                           (3725, "1:02:05")])
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_a_terminal_shows_the_triple_now_training():
    written = []
    live = TerminalProgress(RunProgress(total=2), write=pytest.fail, rewrite=written.append,
                            end=lambda: None, tty=True)
    live.start("karate", "GCN", 0)
    assert " · now karate/GCN seed 0 · " in written[-1]
    live.update("karate", "GCN", 0, "trained")
    assert " · last karate/GCN seed 0 · " in written[-1]


def test_runner_says_which_triple_starts_before_it_runs(tmp_path):
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import gcn, tiny_task

    events = []
    run_benchmark({"tiny": tiny_task(epochs=1)}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                  root=str(tmp_path), started=lambda t, m, s: events.append(("start", s)),
                  progress=lambda t, m, s, status, sec: events.append((status, s)))
    assert events == [("start", 0), ("trained", 0), ("start", 1), ("trained", 1)]


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
def test_xdist_controller_prints_per_test_counts(project):
    pytest.importorskip("xdist")
    # One worker is enough: the controller's reporting is what is under test.
    result = project.runpytest_subprocess("-n", "1", "--graphnetz-seeds=3", "-p", "xdist")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "test_p.py::test_trains: 3 triples (3 trained, 0 from cache) in " in out
    assert not live_lines(out)  # the worker's live lines are not relayed (nor garbled)


@pytest.mark.slow
def test_the_first_progress_line_is_not_captured_into_a_failing_tests_report(pytester):
    """The opening ``0/N`` line goes to the terminal like the others, never into the test's
    captured stdout (where it showed up under "Captured stdout call" of a failing gate)."""
    pytester.makepyfile(scratch_tiny=Path(tiny.__file__).read_text(), test_f='''
from scratch_tiny import gcn, tiny_task


def test_fails(graphnetz_run):
    graphnetz_run({"tiny": tiny_task(epochs=2)}, {"GCN": gcn})
    raise AssertionError("the gate failed")
''')
    # a subprocess: in-process pytester sessions do not capture the terminal reporter's output
    result = pytester.runpytest_subprocess("--graphnetz-seeds=2")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert live_lines(out)[0] == (0, 2, 0, 0)          # still shown, on the terminal
    assert "Captured stdout call" not in out, out
