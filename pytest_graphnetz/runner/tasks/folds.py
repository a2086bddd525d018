"""k-fold cross-validation on top of any node or graph task: ``Task(..., folds=k)``.

Seed ``s`` is fold ``f = s mod k`` of repeat ``r = s // k``: repeat ``r`` draws one stratified
partition of the examples (nodes of a node task, graphs of a graph task) into k folds from a
generator seeded by ``r`` alone, so seeds ``r·k … r·k + k − 1`` are the k folds of one
partition and every example is tested exactly once per repeat. Within seed ``s``:

- test: fold ``f``;
- validation (``best_val`` epoch selection): fold ``(f + 1) mod k``;
- training: the other k − 2 folds.

Stratified by class for ``node`` and ``graph`` tasks (examples sorted by class, random order
within, dealt to folds in turn); a ``graph_reg`` task is dealt in random order. The loader's
own split is discarded: its train, val and test examples are pooled first. Seeds 0..k−1 are
one plain k-fold CV; seeds 0..r·k−1 are r repeats (repeated k-fold CV).
"""

from __future__ import annotations

from typing import Any

from pytest_graphnetz.runner.tasks.splits import derive_seed

MIN_FOLDS = 3  # test, validation and at least one training fold


def fold_of(seed: int, k: int) -> tuple[int, int]:
    """``(repeat, fold)`` of benchmark seed ``seed`` under k folds."""
    return seed // k, seed % k


def assign_folds(labels: Any, k: int, repeat: int, *, stratify: bool) -> Any:
    """Fold id [n] in 0..k-1 of each of n examples for one repeat (a torch long tensor)."""
    import torch

    n = int(labels.numel()) if labels is not None else 0
    if n < k:
        raise ValueError(f"{k} folds need at least {k} examples, the task has {n}")
    gen = torch.Generator().manual_seed(derive_seed(repeat, "folds"))
    order = torch.randperm(n, generator=gen)
    if stratify:
        # Stable sort by class keeps the random order within each class.
        order = order[torch.sort(labels.reshape(-1)[order], stable=True).indices]
    folds = torch.empty(n, dtype=torch.long)
    folds[order] = torch.arange(n) % k
    return folds


def apply_folds(data: Any, *, kind: str, k: int, seed: int, task: str) -> Any:
    """``data`` re-split for ``seed``'s fold (see the module docstring)."""
    repeat, fold = fold_of(seed, k)
    val_fold = (fold + 1) % k
    if kind == "node":
        y = data.y.reshape(-1)
        ids = assign_folds(y, k, repeat, stratify=True)
        out = data.clone()
        out.test_mask = ids == fold
        out.val_mask = ids == val_fold
        out.train_mask = (ids != fold) & (ids != val_fold)
        return out
    if kind in ("graph", "graph_reg"):
        from pytest_graphnetz.runner.training.graph import splits

        train, val, test = splits(data, task=_Named(task, kind))
        graphs = [*train, *(val or []), *test]
        import torch

        y = torch.stack([g.y.reshape(-1)[0] for g in graphs])
        ids = assign_folds(y, k, repeat, stratify=kind == "graph").tolist()
        pick = lambda which: [g for g, i in zip(graphs, ids, strict=True) if which(i)]  # noqa: E731
        return (pick(lambda i: i not in (fold, val_fold)), pick(lambda i: i == val_fold),
                pick(lambda i: i == fold))
    raise ValueError(f"task {task!r}: `folds` works for node and graph tasks, not kind {kind!r}")


class _Named:
    """The two attributes ``training.graph.splits`` names in its errors."""

    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind = name, kind
