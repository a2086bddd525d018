"""Built-in trainer for link prediction (``kind="link"``).

Loader contract: a ``(train, val, test)`` tuple as returned by PyG's ``RandomLinkSplit``
(``train.edge_index`` the training edges; ``val``/``test`` with ``edge_label_index`` [2, n] and
``edge_label`` [n], 1 for an edge, 0 for a sampled non-edge), or one undirected ``Data``, which
the trainer splits 70/10/20 with a ``RandomLinkSplit`` drawn from the triple's seed
(``torch.initial_seed()``, so every model under one seed gets the same split).

Forward contract: the model is an encoder, ``model(x, edge_index) -> z`` of shape
[num_nodes, out_channels]; ``out_channels`` is the embedding width, ``task.options
["embedding_dim"]`` (default 64). The score of a pair (u, v) is the dot product
``z[u] · z[v]``, trained with binary cross-entropy against as many fresh negatives per epoch
(uniform non-edges drawn from a generator seeded with the triple's seed: identical across
models) as there are training edges.

Metrics per epoch on val and test: ``auc`` (default), ``mrr`` and ``hits@K`` (K from the metric
name, else ``task.options["hits_k"]``, default 10); the two not chosen as the task's metric are
kept as ``extra`` series (``val_mrr``, ``test_hits@10``...). See
:mod:`pytest_graphnetz.base.metrics`.
Each test pair's score and label are kept for the final and the best-validation epoch
(``History.outcomes``), so the metric can be recomputed on resampled pairs.
"""

from __future__ import annotations

from typing import Any

from pytest_graphnetz.base.metrics import hits_at_k, mrr, roc_auc
from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.runner.training.common import EpochRecorder, OutcomeTracker, make_optimizer

DEFAULT_EMBEDDING = 64
DEFAULT_HITS_K = 10


def channels(task: Any, data: Any) -> tuple[int, int]:
    """``(node feature width, embedding width)``."""
    first = data[0] if isinstance(data, (tuple, list)) else data
    return int(first.num_node_features), int(task.options.get("embedding_dim", DEFAULT_EMBEDDING))


def _metric_names(task: Any) -> tuple[str, list[str]]:
    """The reported metric and the three computed ones: ``auc``, ``mrr``, ``hits@K``."""
    metric = task.metric_name.lower()
    k = int(task.options.get("hits_k", DEFAULT_HITS_K))
    if metric.startswith("hits@"):
        try:
            k = int(metric.removeprefix("hits@"))
        except ValueError:
            raise ValueError(f"task {task.name!r}: metric {task.metric_name!r} is not "
                             "`hits@<K>` with an integer K") from None
    names = ["auc", "mrr", f"hits@{k}"]
    if metric not in names:
        raise ValueError(f"task {task.name!r}: the built-in 'link' trainer computes `auc`, "
                         f"`mrr` and `hits@K`, not `metric={task.metric_name!r}`; pick one of "
                         "those or pass `trainer=` with your own loop")
    return metric, names


def _negatives(edge_index: Any, num_nodes: int, count: int, generator: Any) -> Any:
    """``count`` uniform node pairs [2, count] that are neither self-loops nor edges.

    Drawn on the CPU from ``generator``; a dense graph may leave fewer than ``count``.
    """
    import torch

    existing = (edge_index[0] * num_nodes + edge_index[1]).cpu()
    found = torch.empty(0, dtype=torch.long)
    for _ in range(10):  # bounded: each round keeps most of its draws on a sparse graph
        pairs = torch.randint(num_nodes * num_nodes, (2 * count + 16,), generator=generator)
        keep = (pairs // num_nodes != pairs % num_nodes) & ~torch.isin(pairs, existing)
        found = torch.cat([found, pairs[keep]])[:count]
        if found.numel() == count:
            break
    return torch.stack([found // num_nodes, found % num_nodes])


def _scores(z: Any, pairs: Any) -> Any:
    """Dot-product scores [n] of node pairs ``pairs`` [2, n] under embeddings ``z`` [N, d]."""
    return (z[pairs[0]] * z[pairs[1]]).sum(dim=-1)


def train(model: Any, data: Any, *, task: Any, device: Any) -> History:
    """Train the encoder ``model`` for ``task.epochs`` full-batch epochs; its per-epoch History."""
    import torch
    import torch.nn.functional as F

    metric, names = _metric_names(task)
    if isinstance(data, (tuple, list)):
        if len(data) != 3:
            raise TypeError(f"task {task.name!r}: a link loader returns (train, val, test) "
                            f"from RandomLinkSplit or one Data, got {len(data)} items")
        train_data, val_data, test_data = data
    else:
        from pytest_graphnetz.runner.tasks.link import split_links

        train_data, val_data, test_data = split_links(data.cpu(), seed=torch.initial_seed())
        train_data, val_data, test_data = (d.to(device) for d in (train_data, val_data, test_data))
    for split, d in (("val", val_data), ("test", test_data)):
        if getattr(d, "edge_label_index", None) is None or getattr(d, "edge_label", None) is None:
            raise ValueError(f"task {task.name!r}: the {split} split has no `edge_label_index`/"
                             "`edge_label` (build the splits with RandomLinkSplit)")

    positives = train_data.edge_index
    num_nodes = int(train_data.num_nodes)
    sampler = torch.Generator().manual_seed(torch.initial_seed())
    optimizer = make_optimizer(model, task)
    series = ["train_loss"] + [f"{split}_{n}" for split in ("val", "test") for n in names]
    rec = EpochRecorder(task.epochs, "cpu", series)
    outcomes = OutcomeTracker(task.metric_name, has_val=True)
    k = int(names[2].removeprefix("hits@"))
    # The held-out labels never change: bring them to the CPU and split them once.
    held_out = []
    for split, d in (("val", val_data), ("test", test_data)):
        label = d.edge_label.cpu()
        held_out.append((split, d, label, label == 1, label == 0))
    for epoch in range(task.epochs):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        z = model(train_data.x, train_data.edge_index)
        negatives = _negatives(positives, num_nodes, positives.size(1), sampler).to(z.device)
        logits = torch.cat([_scores(z, positives), _scores(z, negatives)])
        labels = torch.cat([torch.ones(positives.size(1)), torch.zeros(negatives.size(1))])
        loss = F.binary_cross_entropy_with_logits(logits, labels.to(z.device))
        loss.backward()
        optimizer.step()

        model.eval()
        values: dict[str, float] = {"train_loss": float(loss.detach())}
        with torch.no_grad():
            for split, d, label, is_pos, is_neg in held_out:
                z = model(d.x, d.edge_index)
                rec.flag(epoch, z)
                score = _scores(z, d.edge_label_index).float().cpu()
                pos, neg = score[is_pos], score[is_neg]
                values[f"{split}_auc"] = roc_auc(score, label)
                values[f"{split}_mrr"] = mrr(pos, neg)
                values[f"{split}_{names[2]}"] = hits_at_k(pos, neg, k)
        rec.record(epoch, **values)
        if torch.isfinite(score).all():  # `score`, `label`: the test split's, evaluated last
            outcomes.update(epoch, values[f"val_{metric}"], score, label == 1)
        if rec.should_stop(epoch):
            break
    return outcomes.attach(rec.history(test=f"test_{metric}", val=f"val_{metric}"))
