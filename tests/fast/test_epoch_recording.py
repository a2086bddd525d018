"""What the built-in trainers record per epoch: which epoch's per-example outcomes they keep
for ``best_val`` (the epoch the report selects, checked against numpy on sequences with ties,
NaN and infinities), and the epoch a flagged non-finite output marks diverged."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pytest_graphnetz.runner.training.common import EpochRecorder, OutcomeTracker  # noqa: E402

FLOAT32_MAX = float(np.finfo(np.float32).max)
VALUES = [0.25, 0.5, 0.75, 0.5000001, float("nan"), float("inf"), -float("inf"), 1e-3]


def reference_epoch(values: list[float], higher: bool) -> int:
    """The first epoch of the largest value at float32, NaN last and infinities as
    ``torch.nan_to_num`` ranks them (the device path's rule)."""
    v = np.asarray(values, dtype=np.float32).astype(float)
    v = v if higher else -v
    v = np.where(np.isnan(v), -np.inf, np.clip(v, -FLOAT32_MAX, FLOAT32_MAX))
    return int(np.argmax(v))


@pytest.mark.parametrize("metric", ["accuracy", "mae"])
def test_the_kept_epoch_is_the_reference_choice(metric):
    rng = np.random.default_rng(59)
    for _ in range(500):
        values = list(rng.choice(VALUES, size=int(rng.integers(1, 12))))
        tracker = OutcomeTracker(metric, has_val=True)
        for epoch, value in enumerate(values):
            tracker.update(epoch, torch.tensor(value), torch.tensor([epoch]))
        expected = reference_epoch(values, higher=metric == "accuracy")
        assert tracker.best[1] == expected, values
        assert tracker.best[2][0].tolist() == [expected]


def test_an_infinite_value_ranks_above_nan_as_on_a_device():
    """nan_to_num turns -inf into the lowest finite float32, above NaN's -inf."""
    tracker = OutcomeTracker("accuracy", has_val=True)
    for epoch, value in enumerate([float("nan"), -float("inf")]):
        tracker.update(epoch, torch.tensor(value), torch.tensor([epoch]))
    assert tracker.best[1] == 1


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_flagged_non_finite_output_diverges_its_epoch_and_the_rest(bad):
    recorder = EpochRecorder(6, torch.device("cpu"), ["train_loss", "test"])
    for epoch in range(6):
        logits = torch.ones(4, 2)
        if epoch == 3:
            logits[2, 1] = bad
        recorder.record(epoch, train_loss=torch.tensor(0.5), test=torch.tensor(0.75))
        recorder.flag(epoch, logits)
        recorder.flag(epoch, torch.ones(3))   # a finite flag later in the epoch keeps it
    history = recorder.history(val=None)
    assert history.test[:3] == (0.75, 0.75, 0.75)
    assert all(np.isnan(history.test[3:]))


def test_finite_flags_leave_every_epoch():
    recorder = EpochRecorder(3, torch.device("cpu"), ["train_loss", "test"])
    for epoch in range(3):
        recorder.record(epoch, train_loss=0.5, test=0.25)
        recorder.flag(epoch, torch.zeros(2, 2))
    assert recorder.history(val=None).test == (0.25, 0.25, 0.25)
