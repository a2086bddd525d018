"""Warm script runs: after a script's first run shows it imports torch, its later runs are
children forked from a server that imported torch and PyG once. They must give what a cold
interpreter gives: the same values bit for bit, exit codes, stderr tails, timeouts that end the
whole group. (benchmarks/command_overhead.py measures what it saves.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
from tests.helpers.commands import UNSEEDED_RUN as RUN

if not sys.platform.startswith("linux"):
    pytest.skip("warm runs fork: Linux only", allow_module_level=True)

import os

from pytest_graphnetz.runner.command import Command, CommandError  # noqa: E402
from pytest_graphnetz.runner.command import warm as command_warm  # noqa: E402

SCRIPT = '''
import sys, time
import torch
import pytest_graphnetz.script as graphnetz

graphnetz.seed()
if sys.argv[1] == "fail":
    print("something went wrong", file=sys.stderr)
    sys.exit(7)
if sys.argv[1] == "hang":
    import subprocess
    subprocess.Popen(["sleep", "300"])
    time.sleep(300)
w = torch.randn(8, 3, requires_grad=True)
x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
opt = torch.optim.SGD([w], lr=0.5)
for epoch in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(x @ w, y)
    loss.backward()
    opt.step()
    acc = float(((x @ w).argmax(1) == y).float().mean())
    graphnetz.record(test=acc, train_loss=float(loss), w=float(w.sum()))
'''


@pytest.mark.slow   # 9-29 s on an idle core: over the fast tier's budget
def test_warm_runs_match_cold_ones_bit_for_bit(tmp_path, monkeypatch, commands) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    ok = Command([sys.executable, "train.py", "ok"], cwd=tmp_path)
    monkeypatch.setenv(command_warm.WARM_ENV, "0")
    cold = [commands.run(ok, seed=s, **RUN) for s in (0, 1)]
    monkeypatch.delenv(command_warm.WARM_ENV)
    commands.run(ok, seed=5, **RUN)   # the first run: cold, and shows that it imports torch
    warm = [commands.run(ok, seed=s, **RUN) for s in (0, 1)]
    assert len(commands.servers.running()) == 1, "the later runs were not forked warm"
    assert [h.to_dict() for h in warm] == [h.to_dict() for h in cold]

    failing = Command([sys.executable, "train.py", "fail"], cwd=tmp_path)
    with pytest.raises(CommandError, match=r"exited with code 7.*\n.*something went wrong"):
        commands.run(failing, seed=0, **RUN)

    hanging = Command([sys.executable, "train.py", "hang"], cwd=tmp_path, timeout=3)
    with pytest.raises(CommandError, match="ran past its timeout of 3 s"):
        commands.run(hanging, seed=0, **RUN)
    sleeps = [p for p in Path("/proc").iterdir() if p.name.isdigit()
              and _cmdline(p) == b"sleep\x00300\x00" and _parent_chain_has(p, tmp_path)]
    assert sleeps == []
    # A command's own settings (`env=`) share the server; a thread count read at import
    # does not.
    servers = commands.servers.running()
    flagged = Command([sys.executable, "train.py", "ok"], cwd=tmp_path, env={"MODEL": "b"})
    assert commands.run(flagged, seed=0, **RUN).to_dict() == cold[0].to_dict()
    assert commands.servers.running() == servers
    commands.close()
    assert commands.servers.running() == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def _parent_chain_has(proc: Path, where: Path) -> bool:
    try:
        return Path(proc / "cwd").resolve() == where.resolve()
    except OSError:
        return False


def test_the_session_header_says_when_scripts_run_cold(pytester: pytest.Pytester,
                                                       monkeypatch) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    warm = pytester.runpytest("-p", "no:cacheprovider")
    assert "graphnetz: seeds" in warm.stdout.str()
    assert "scripts run cold" not in warm.stdout.str()
    monkeypatch.setenv(command_warm.WARM_ENV, "0")
    cold = pytester.runpytest("-p", "no:cacheprovider")
    cold.stdout.fnmatch_lines(["graphnetz: seeds *, scripts run cold (GRAPHNETZ_WARM_SCRIPTS=0)"])
    monkeypatch.delenv(command_warm.WARM_ENV)
    # A pinned GPU (this machine may have none, and the session would refuse it): cold.
    assert command_warm.warm_mode("cuda:0") == "device cuda:0: CUDA runs start cold"
    assert command_warm.warm_mode("cpu") is None


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


# What a fresh interpreter gives that a forked one could lose. `parent` (the run's parent
# process: the server when warm, this process when cold) shows which way each run went and is
# left out of the comparison; everything else must be the same bit for bit, or, for a draw
# made before the script seeds, fresh in every run as in a new interpreter.
SHAPES = '''
import json, os, random, sys, threading
import numpy as np
import torch
import pytest_graphnetz.script as graphnetz
import state

# Drawn before seeding, and what an earlier run may have changed, as this run finds it.
SEEN = {"at_random": random.random(), "at_numpy": float(np.random.rand()),
        "at_torch": float(torch.rand(1)), "found_calls": len(state.CALLS),
        "found_dtype": float(torch.get_default_dtype() == torch.float64),
        "found_mark": float(hasattr(np, "graphnetz_mark")),
        "found_env": float("LEAKED" in os.environ)}
graphnetz.seed()


def train(record, **seen):
    w = torch.randn(8, 3, requires_grad=True)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    opt = torch.optim.SGD([w], lr=0.5)
    for epoch in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w, y)
        loss.backward()
        opt.step()
        record(test=float(((x @ w).argmax(1) == y).float().mean()), train_loss=float(loss),
               np_draw=float(np.random.rand()), parent=float(os.getppid()), **seen)


if sys.argv[1] == "thread":      # never joined: the interpreter's shutdown waits for it
    threading.Thread(target=train, args=(graphnetz.record,)).start()
elif sys.argv[1] == "unclosed":  # the metrics file written by hand and never closed
    epochs = []
    train(lambda **values: epochs.append(values))
    out = open(sys.argv[2], "w")
    json.dump({"metric": "accuracy", "test": [e["test"] for e in epochs],
               "extra": {"parent": [e["parent"] for e in epochs]}}, out)
else:                            # draws at import, module state found; then changed
    train(graphnetz.record, **SEEN)
    state.CALLS.append(1)
    torch.set_default_dtype(torch.float64)
    np.graphnetz_mark = 1
    os.environ["LEAKED"] = "1"
'''


DRAWN = ("at_random", "at_numpy", "at_torch")


def _comparable(history) -> dict:
    data = history.to_dict()
    for name in ("parent", *DRAWN):
        data.get("extra", {}).pop(name, None)
    return data


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["thread", "unclosed", "globals"])
def test_warm_runs_give_what_a_fresh_interpreter_gives(tmp_path, monkeypatch, shape,
                                                       commands) -> None:
    (tmp_path / "train.py").write_text(SHAPES)
    (tmp_path / "state.py").write_text("CALLS = []\n")
    command = Command([sys.executable, "train.py", shape, "{output}"], cwd=tmp_path)
    seeds = (0, 1)
    monkeypatch.setenv(command_warm.WARM_ENV, "0")
    cold = [commands.run(command, seed=s, **RUN) for s in seeds]
    monkeypatch.delenv(command_warm.WARM_ENV)
    commands.run(command, seed=5, **RUN)   # the first run: cold, and shows it imports torch
    warm = [commands.run(command, seed=s, **RUN) for s in seeds]
    (server,) = commands.servers.running()
    assert {h.extra["parent"][0] for h in cold} == {float(os.getpid())}
    assert {h.extra["parent"][0] for h in warm} == {float(server)}, "not forked warm"
    assert [len(h.test) for h in warm + cold] == [3] * 4
    # Seeded training, and module state as a fresh interpreter finds it (nothing a run
    # changed leaks into the next), the same bit for bit.
    assert [_comparable(h) for h in warm] == [_comparable(h) for h in cold]
    if shape == "globals":
        assert all(set(h.extra["found_calls"] + h.extra["found_dtype"] + h.extra["found_mark"]
                       + h.extra["found_env"]) == {0.0} for h in warm + cold)
        # Draws made before seeding are fresh in every run, as a new interpreter's are.
        for runs in (cold, warm):
            for name in DRAWN:
                assert len({h.extra[name][0] for h in runs}) == len(runs), (name, runs)
    commands.close()
