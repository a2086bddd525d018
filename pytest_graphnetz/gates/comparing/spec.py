"""What one gate call asks: :class:`GateSpec`, its settings (gate, test, margin, δ, α, strict,
suite row, rerun safety, first look), built once where a gate is called and read by every layer
below it (:mod:`..api`, :mod:`.compare`, :mod:`.cells`); and :data:`RESOLVABLE`, the δ asked as
"what the seeds resolve", a value of its own type beside a number or None."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from pytest_graphnetz import stats


class Resolvable(enum.Enum):
    """``min_effect="resolvable"``: δ is what the paired seeds resolve, read from the
    calibration beside the baseline (``graphnetz calibrate``)."""

    RESOLVABLE = "resolvable"


RESOLVABLE = Resolvable.RESOLVABLE

MinEffect = float | Resolvable | None


def parse_min_effect(value: float | str | Resolvable | None) -> MinEffect:
    """``min_effect`` as a gate or the session spells it (a number, None, ``"resolvable"``) as
    the value the gates read; any other string is refused."""
    if isinstance(value, str):
        if value != RESOLVABLE.value:
            raise ValueError(f"`min_effect` must be a number, None or 'resolvable', "
                             f"got {value!r}")
        return RESOLVABLE
    return value


@dataclass(frozen=True)
class GateSpec:
    """The settings of one gate call. ``min_effect``: δ, a number, None (each metric's default)
    or :data:`RESOLVABLE` until the gate reads the calibration (:meth:`delta` is the number);
    ``first_look`` None: the schedule's default first look."""

    gate: str = "not_worse"
    test: str = "paired-t"
    margin: float = 0.0
    min_effect: MinEffect = None
    alpha: float = 0.05
    strict: bool = False
    rng: stats.RngLike = None
    suite: bool = False
    suite_min_effect: float | None = None
    rerun_safe: bool = True
    first_look: int | None = None

    @classmethod
    def asked(cls, gate: str, session: object, **asked: Any) -> GateSpec:
        """The spec of a gate called with ``asked`` (its keyword arguments): those left None
        take the session's defaults (``session``: the test's :class:`~.recorder.GateRecorder`)."""
        fields = {name: value for name, value in asked.items() if value is not None}
        for name in ("alpha", "strict", "min_effect", "rerun_safe", "first_look"):
            fields.setdefault(name, getattr(session, name))
        fields["min_effect"] = parse_min_effect(fields["min_effect"])
        return cls(gate=gate, **fields)

    @property
    def resolvable(self) -> bool:
        """Whether δ is to be read from the calibration (the not-worse gate only)."""
        return self.min_effect is RESOLVABLE and self.gate == "not_worse"

    @property
    def delta(self) -> float | None:
        """δ as a number, None for each metric's default (also while it is :data:`RESOLVABLE`:
        the layers that need it read the calibration first, :meth:`with_delta`)."""
        return None if isinstance(self.min_effect, Resolvable) else self.min_effect

    def with_delta(self, delta: float | None) -> GateSpec:
        return replace(self, min_effect=delta)

    def replace(self, **changes: Any) -> GateSpec:
        return replace(self, **changes)


__all__ = ["RESOLVABLE", "GateSpec", "MinEffect", "Resolvable", "parse_min_effect"]
