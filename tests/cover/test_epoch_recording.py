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


def test_the_cpu_series_hold_what_a_float32_tensor_holds():
    """On the CPU the recorder writes through numpy views; each stored value is the one a
    float32 tensor's indexed assignment stores (torch's rounding, the reference), for floats
    and for tensors of every float width, NaN and infinities, with or without a gradient."""
    rng = np.random.default_rng(59)
    values = [*VALUES, 1 / 3, 1e-45, 3.4028236e38, -2.5e-39, *rng.normal(size=20) * 1e3]
    kinds = [float, lambda v: torch.tensor(v, dtype=torch.float64),
             lambda v: torch.tensor(v, dtype=torch.float32),
             lambda v: torch.tensor(v, dtype=torch.float16),
             lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True) * 1]
    for make in kinds:
        recorder = EpochRecorder(len(values), torch.device("cpu"), ["test"])
        reference = torch.full((len(values),), float("nan"))
        for epoch, v in enumerate(values):
            given = make(v)
            try:
                reference[epoch] = given.detach().to(torch.float32) if isinstance(
                    given, torch.Tensor) else given
            except RuntimeError:  # a float beyond float32's range: torch refuses it
                with pytest.raises(RuntimeError, match="overflow"):
                    recorder.record(epoch, test=given)
                continue
            recorder.record(epoch, test=given)
        assert recorder.series["test"].numpy().tobytes() == reference.numpy().tobytes()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_a_cpu_flag_reads_what_isfinite_reads(dtype):
    """The numpy check on the CPU, against torch.isfinite on strided and transposed views."""
    for bad in (float("nan"), float("inf"), -float("inf"), None):
        logits = torch.ones(5, 3, dtype=dtype)
        if bad is not None:
            logits[4, 2] = bad
        for view in (logits, logits.t()):
            recorder = EpochRecorder(1, torch.device("cpu"), ["test"])
            recorder.flag(0, view)
            assert bool(recorder.finite[0]) == bool(torch.isfinite(view).all())
