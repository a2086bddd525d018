"""Built-in trainers, one module per task kind, and the custom-trainer contract.

Every trainer has the signature ``train(model, data, *, task, device) -> History`` and records
per epoch: train loss, the metric on the validation split and on the test split (val and test
evaluated in one forward pass where the kind allows). ``channels(task, data) -> (in, out)``
gives the arguments of the model factory ``factory(in_channels, out_channels)``.

A custom trainer (``Task(..., trainer=fn)``) follows the same signature and may return a
``History`` or a mapping with keys ``test`` (required), ``val``, ``train_loss``, ``extra`` and
``outcomes``. ``outcomes`` (optional) maps a 0-based epoch to what the model did on each test
example at that epoch — a :class:`~pytest_graphnetz.outcomes.TestOutcomes`, or a mapping
``{"metric": "accuracy", "correct": [1, 0, ...]}`` / ``{"metric": "mae", "errors": [...]}`` /
``{"metric": "auc", "scores": [...], "labels": [1, 0, ...]}`` — for the epochs the report may
select (the last one, and the best-validation one). They enable
``summary(source="test_set" | "total")`` and ``pairwise(test="mcnemar")``; the metric they
recompute must equal the ``test`` value of their epoch, else the run is refused.
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


def as_history(result: Any, *, where: str, metric: str | None = None) -> History:
    """Accept a trainer's ``History`` or mapping; anything else is an error naming ``where``.

    With ``metric``, per-example outcomes must recompute the test value of their epoch.
    """
    if isinstance(result, Mapping) and "test" in result:
        result = History.from_dict(result)
    if isinstance(result, History):
        if metric is not None and result.outcomes:
            from ..outcomes import outcomes_problem

            problem = outcomes_problem(result, metric)
            if problem is not None:
                raise ValueError(f"{where}: {problem}; return outcomes of the epoch whose "
                                 "test value they give")
        return result
    raise TypeError(
        f"{where}: a trainer must return a History or a mapping with a `test` series "
        f"(and optionally `val`, `train_loss`, `extra`), got {type(result).__name__}"
    )
