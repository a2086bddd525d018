"""Built-in trainers, one module per task kind, and the custom-trainer contract.

Every trainer has the signature ``train(model, data, *, task, device) -> History`` and records
per epoch: train loss, the metric on the validation split and on the test split (val and test
evaluated in one forward pass where the kind allows). ``channels(task, data) -> (in, out)``
gives the arguments of the model factory ``factory(in_channels, out_channels)``.

A custom trainer (``Task(..., trainer=fn)``) follows the same signature and may return a
``History`` or a mapping with keys ``test`` (required), ``val``, ``train_loss``, ``extra``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ..history import History

# kind -> module (relative to this package) exposing `train` and `channels`
_MODULES = {"node": ".node", "graph": ".graph", "graph_reg": ".graph", "link": ".link"}


def builtin(kind: str):
    """The module implementing the built-in trainer of ``kind``."""
    return importlib.import_module(_MODULES[kind], __name__)


def as_history(result: Any, *, where: str) -> History:
    """Accept a trainer's ``History`` or mapping; anything else is an error naming ``where``."""
    if isinstance(result, History):
        return result
    if isinstance(result, Mapping) and "test" in result:
        return History.from_dict(result)
    raise TypeError(
        f"{where}: a trainer must return a History or a mapping with a `test` series "
        f"(and optionally `val`, `train_loss`, `extra`), got {type(result).__name__}"
    )
