"""The innocent change a calibration measures: every model of a benchmark trained under salted
seeds (:func:`salted_seed`), so that every random draw of initialisation and training moves
while the data and splits do not — :class:`SaltedFactory` for a model factory
(:func:`salted_models` for a models dict), :func:`salted_seed_map` for a command task's script
(the run's seed map: the script receives the salted seed, the runner loads the data at the
benchmark seed)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.gates.calibration.resolution import DEFAULT_SALT

if TYPE_CHECKING:
    from pytest_graphnetz.runner.environment import SeedMap

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


def salted_models(models: Mapping[str, Any], salt: int = DEFAULT_SALT) -> dict[str, Any]:
    """Every model factory of a ``run_benchmark`` call as ``SaltedFactory(factory, salt)``; a
    command task's script (a ``Command``, which is no factory) as it is: the run salts it
    through ``seed_map=salted_seed_map(salt)``."""
    salt = _checked(salt)
    return {name: SaltedFactory(model, salt) if callable(model) else model
            for name, model in models.items()}


def salted_seed_map(salt: int = DEFAULT_SALT) -> SeedMap:
    """The seed map of a run under ``salt`` (``run_benchmark(..., seed_map=)``): a command
    task's script receives :func:`salted_seed` for each benchmark seed (``{seed}``,
    ``GRAPHNETZ_SEED``, so ``graphnetz.seed()`` reseeds every RNG with it) and the benchmark
    seed in ``GRAPHNETZ_DATA_SEED`` (``graphnetz.data_seed()``), for a split drawn from the
    seed. The runner loads and fingerprints the data at the benchmark seed, so the pairing
    checks of :func:`~.salted_run.calibrate_reports` hold. The salt is in the map's key, hence
    in the cache key: a salted run never reuses an unsalted one."""
    from pytest_graphnetz.runner.environment import SeedMap

    salt = _checked(salt)
    return SeedMap(functools.partial(salted_seed, salt=salt), {"salt": salt})


def _checked(salt: int) -> int:
    if isinstance(salt, bool) or int(salt) != salt or int(salt) < 1:
        raise ValueError(f"`salt` must be a positive integer (0 is the unsalted run), got {salt!r}")
    return int(salt)


__all__ = ["SALT_ATTRIBUTE", "SALT_LABEL", "SaltedFactory", "salted_models", "salted_seed",
           "salted_seed_map"]
