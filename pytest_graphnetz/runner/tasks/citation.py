"""Citation networks (Cora, CiteSeer, PubMed) through PyG's ``Planetoid``, audited.

Tasks: ``cora``, ``citeseer``, ``pubmed`` use the public Planetoid split (20 labelled nodes per
class, 500 validation, 1000 test; the same data for every seed); ``cora_random``,
``citeseer_random``, ``pubmed_random`` draw a split of the same sizes from each seed.

Files: the eight raw files ``ind.<name>.{x,tx,allx,y,ty,ally,graph,test.index}`` are fetched
from ``$GRAPHNETZ_PLANETOID_URL`` (default: Planetoid's own URL; ``file://`` works) into
``<root>/<Name>/raw`` by :mod:`.audit` (atomic, size-checked, manifest), then processed by
``Planetoid`` into ``<root>/<Name>/processed``. A damaged raw file is downloaded again and a
damaged processed file rebuilt, a bounded number of times. On a machine without internet,
copy the raw files into ``<root>/<Name>/raw`` (the error message names the directory).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_graphnetz.runner.tasks.audit import DEFAULT_ATTEMPTS, audited, download, verify
from pytest_graphnetz.runner.tasks.base import Task

URL_ENV = "GRAPHNETZ_PLANETOID_URL"
RAW_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}


def planetoid_url(url: str | None = None) -> str:
    """The base URL of the raw files: ``url``, else ``$GRAPHNETZ_PLANETOID_URL``, else PyG's."""
    if url:
        return url.rstrip("/")
    if os.environ.get(URL_ENV):
        return os.environ[URL_ENV].rstrip("/")
    from torch_geometric.datasets import Planetoid

    return Planetoid.url


def load_planetoid(root: str, *, name: str, url: str | None = None,
                   attempts: int = DEFAULT_ATTEMPTS) -> Any:
    """One Planetoid graph (``Data`` with x, edge_index, y and the public-split masks).

    Downloads what is missing or fails its manifest check, processes, loads; damaged files are
    cleared and rebuilt (at most ``attempts`` tries). Holds a file lock on ``root`` so parallel
    workers never read a half-written file.
    """
    from torch_geometric.datasets import Planetoid

    from pytest_graphnetz.report.files import file_lock

    base = Path(root)
    raw, processed = base / name / "raw", base / name / "processed"
    files = [f"ind.{name.lower()}.{part}" for part in RAW_PARTS]
    source = planetoid_url(url)
    hint = (f"offline? put the raw files ind.{name.lower()}.{{{','.join(RAW_PARTS)}}} "
            f"(Planetoid's format) into {raw} and rerun")
    stage = {"now": "download"}

    def build() -> Any:
        stage["now"] = "download"
        for file in files:
            if not verify(raw / file):
                download(f"{source}/{file}", raw / file, attempts=attempts, fill_hint=hint)
        stage["now"] = "load" if (processed / "data.pt").exists() else "process"
        return Planetoid(str(base), name)[0]

    def damaged(error: BaseException) -> list[Path]:
        if stage["now"] == "download":
            raise error  # `download` already retried that file its `attempts` times
        # A processed file that fails to load is rebuilt from raw; raw files that fail to
        # parse are fetched again.
        return [processed] if stage["now"] == "load" else [processed, raw]

    base.mkdir(parents=True, exist_ok=True)
    with file_lock(base / name):  # .<name>.lock beside the dataset directory
        return audited(build, clear_on_failure=damaged, attempts=attempts,
                       what=f"Planetoid {name} under {base / name}")


def random_split(data: Any, *, seed: int, num_train_per_class: int = 20, num_val: int = 500,
                 num_test: int = 1000) -> Any:
    """``data`` with masks drawn from ``seed``: per class ``num_train_per_class`` training
    nodes, then ``num_val`` validation and ``num_test`` test nodes from the rest (Planetoid's
    ``split="random"`` sizes, from a private generator instead of the global RNG)."""
    import torch

    from pytest_graphnetz.runner.tasks.splits import derive_seed

    gen = torch.Generator().manual_seed(derive_seed(seed, "planetoid_random_split"))
    n = data.num_nodes
    train = torch.zeros(n, dtype=torch.bool)
    for c in torch.unique(data.y).tolist():
        idx = (data.y == c).nonzero().view(-1)
        train[idx[torch.randperm(idx.numel(), generator=gen)[:num_train_per_class]]] = True
    rest = (~train).nonzero().view(-1)
    rest = rest[torch.randperm(rest.numel(), generator=gen)]
    val, test = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    val[rest[:num_val]] = True
    test[rest[num_val:num_val + num_test]] = True
    out = data.clone()
    out.train_mask, out.val_mask, out.test_mask = train, val, test
    return out


def load_planetoid_random(root: str, *, seed: int, name: str, url: str | None = None,
                          attempts: int = DEFAULT_ATTEMPTS) -> Any:
    """:func:`load_planetoid` with the masks of :func:`random_split` under ``seed``."""
    return random_split(load_planetoid(root, name=name, url=url, attempts=attempts), seed=seed)


def planetoid_task(name: str, *, random: bool = False, url: str | None = None,
                   attempts: int = DEFAULT_ATTEMPTS) -> Task:
    """A node-classification ``Task`` on ``Cora``, ``CiteSeer`` or ``PubMed``.

    ``random=True`` draws the split from each seed; ``url`` overrides the raw-file source.
    Defaults follow the GCN paper: 200 epochs, lr 0.01, weight decay 5e-4.
    """
    key = name.lower()
    if key not in NAMES:
        raise KeyError(f"no Planetoid dataset {name!r}; choose one of {sorted(NAMES.values())}")
    loader = load_planetoid_random if random else load_planetoid
    return Task(f"{key}_random" if random else key,
                functools.partial(loader, name=NAMES[key], url=url, attempts=attempts),
                kind="node", category="citation", epochs=200, lr=0.01, weight_decay=5e-4)


TASKS: dict[str, Callable[[], Task]] = {
    **{key: functools.partial(planetoid_task, key) for key in NAMES},
    **{f"{key}_random": functools.partial(planetoid_task, key, random=True) for key in NAMES},
}
