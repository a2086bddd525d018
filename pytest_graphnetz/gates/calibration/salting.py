"""The innocent change a calibration measures: every model of a benchmark trained under salted
seeds (:func:`salted_seed`), so that every random draw of initialisation and training moves
while the data and splits do not — :class:`SaltedFactory` for a model factory,
:class:`SaltedCommand` for a command task's script, :func:`salted_models` for a models dict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from pytest_graphnetz.gates.calibration.resolution import DEFAULT_SALT
from pytest_graphnetz.runner.command import Command

SALT_LABEL = "graphnetz-calibrate"
# A plain attribute set on every salted model: the model fingerprint (and so the triple cache
# key) covers it, so two salts never share a cached run, even for a model whose initial weights
# do not depend on the seed.
SALT_ATTRIBUTE = "graphnetz_calibration_salt"


def salted_seed(seed: int, salt: int) -> int:
    """The seed every RNG is reseeded with before a salted model is built, derived from the
    benchmark ``seed`` and ``salt`` (another stream for every salt); in ``[0, 2**32)``, the
    range every seed the runner uses lies in (NumPy's)."""
    from pytest_graphnetz.runner.tasks.splits import derive_seed

    return derive_seed(seed, SALT_LABEL, str(int(salt))) % 2**32


@dataclass(frozen=True)
class SaltedFactory:
    """``factory`` built under salted randomness: the runner has just reseeded every RNG with the
    benchmark seed (after loading the data, so data and splits are already fixed); this reseeds
    them all with :func:`salted_seed` (the runner's own
    :func:`~pytest_graphnetz.runner.environment.reseed`) before building. Initialisation,
    dropout, shuffling and negative sampling (the built-in trainers derive their generators from
    ``torch.initial_seed``) draw other numbers; the model and the data are the same. Picklable,
    for worker processes.
    """

    factory: Callable[[int, int], Any]
    salt: int = DEFAULT_SALT

    def __call__(self, in_channels: int, out_channels: int) -> Any:
        import torch

        from pytest_graphnetz.runner.environment import reseed

        # torch.initial_seed() is the benchmark seed the runner reseeded with just before.
        reseed(salted_seed(torch.initial_seed(), self.salt))
        model = self.factory(in_channels, out_channels)
        setattr(model, SALT_ATTRIBUTE, int(self.salt))
        return model


@dataclass(frozen=True)
class SaltedCommand(Command):
    """A command task's model (:class:`~pytest_graphnetz.runner.command.Command`) under salted
    randomness: the script receives :func:`salted_seed` as its seed (``{seed}``,
    ``GRAPHNETZ_SEED``, so ``graphnetz.seed()`` reseeds every RNG with it) and the benchmark
    seed in ``GRAPHNETZ_DATA_SEED`` (``graphnetz.data_seed()``), for a split drawn from the
    seed. The runner loads and fingerprints the data at the benchmark seed, so the pairing
    checks of :func:`~.salted_run.calibrate_reports` hold. The salt is part of
    :meth:`identity`, hence of the cache key: a salted run never reuses an unsalted one."""

    salt: int = DEFAULT_SALT

    @classmethod
    def of(cls, command: Command, salt: int) -> SaltedCommand:
        return cls(**{f.name: getattr(command, f.name) for f in fields(Command)}, salt=salt)

    def script_seed(self, seed: int) -> int:
        return salted_seed(seed, self.salt)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "salt": int(self.salt)}


def salted_models(models: Mapping[str, Callable[[int, int], Any] | Command],
                  salt: int = DEFAULT_SALT) -> dict[str, SaltedFactory | SaltedCommand]:
    """Every model of a ``run_benchmark`` call under salted randomness: a factory as
    ``SaltedFactory(factory, salt)``, a command task's script as ``SaltedCommand``."""
    if isinstance(salt, bool) or int(salt) != salt or int(salt) < 1:
        raise ValueError(f"`salt` must be a positive integer (0 is the unsalted run), got {salt!r}")
    return {name: SaltedCommand.of(model, int(salt)) if isinstance(model, Command)
            else SaltedFactory(model, int(salt)) for name, model in models.items()}


__all__ = ["SALT_ATTRIBUTE", "SALT_LABEL", "SaltedCommand", "SaltedFactory", "salted_models",
           "salted_seed"]
