"""A sweep on a Dask ``distributed`` cluster: ``executor=client.get_executor()``.

A real ``LocalCluster`` (two worker processes, one thread each: threads of one process would
share torch's RNG) stands in for a remote cluster; nothing home-made imitates it. The report
must equal the serial one bit for bit, and the Dask workers must share the triple cache with
the local process. Skipped when the optional ``dask`` extra (``distributed``) is missing.
"""

from __future__ import annotations

import pytest

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.report.codec import dumps
from tests.helpers.tiny import gcn, sage, tiny_task

distributed = pytest.importorskip("distributed")

MODELS = {"GCN": gcn, "SAGE": sage}
SEEDS = [0, 1, 2]

# The module-scoped cluster (two worker processes) is built once under `-n`, which hands out whole
# files (tests/conftest.py).


@pytest.fixture(scope="module")
def client():
    # dashboard_address=None: no web server (and no port clash with a parallel test run).
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask_client:
        yield dask_client


def test_sweep_on_a_dask_cluster_equals_the_local_one_and_shares_the_cache(
        client, root, tmp_path):
    local = run_benchmark({"tiny": tiny_task()}, MODELS, seeds=SEEDS, device="cpu", root=root)
    cache = tmp_path / "cache"
    # Warm the shared cache locally with one seed: the Dask workers must read it, not retrain.
    run_benchmark({"tiny": tiny_task()}, MODELS, seeds=[1], device="cpu", root=root,
                  cache_dir=cache)
    statuses = {}
    remote = run_benchmark(
        {"tiny": tiny_task()}, MODELS, seeds=SEEDS, device="cpu", root=root, cache_dir=cache,
        executor=client.get_executor(pure=False),
        progress=lambda t, m, s, status, sec: statuses.update({(m, s): status}),
    )
    assert statuses == {(m, s): "cached" if s == 1 else "trained" for m in MODELS for s in SEEDS}
    assert dumps(remote.to_dict()) == dumps(local.to_dict())
    # ...and what the Dask workers wrote, the local process reads back: nothing is retrained.
    again = []
    rerun = run_benchmark({"tiny": tiny_task()}, MODELS, seeds=SEEDS, device="cpu", root=root,
                          cache_dir=cache, progress=lambda *a: again.append(a[3]))
    assert again == ["cached"] * len(MODELS) * len(SEEDS)
    assert dumps(rerun.to_dict()) == dumps(local.to_dict())
    # The work really ran in the cluster's worker processes, not in this one.
    import os

    worker_pids = set(client.run(os.getpid).values())
    assert len(worker_pids) == 2 and os.getpid() not in worker_pids


def test_a_failing_triple_on_the_cluster_is_named(client, root):
    def bad_loader(data_root, *, seed):
        raise ValueError(f"no data for seed {seed}")

    from pytest_graphnetz.runner import TripleError

    with pytest.raises(TripleError, match=r"task 'bad' × model 'GCN' × seed \d failed") as info:
        run_benchmark({"bad": tiny_task("bad", loader=bad_loader)}, {"GCN": gcn}, seeds=[0, 1],
                      device="cpu", root=root, executor=client.get_executor(pure=False))
    assert "no data for seed" in str(info.value)


def test_adaptive_seeds_on_a_dask_cluster_equal_the_local_schedule(client, root):
    from pytest_graphnetz import assert_not_worse, run_adaptive

    # The baseline's "SAGE" is a GCN: against it the candidate's SAGE is a changed model, open
    # at the first look (3 seeds: MIN = 2 is refused); the unchanged GCN stops IDENTICAL there.
    baseline = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn, "SAGE": gcn}, seeds=range(6),
                             device="cpu", root=root)

    def schedule(**kw):
        report = run_adaptive({"tiny": tiny_task()}, MODELS, seeds=range(6), min_seeds=3,
                              device="cpu", root=root, **kw)
        # δ 0.2, not the default 0.01: the same stops and verdicts, but the INCONCLUSIVE
        # cell's advice is planned for a δ this noisy tiny task can reach (at 0.01 the
        # sequential plan runs to thousands of seeds: ~180 CPU s for this test, not ~2).
        verdicts = assert_not_worse(report, baseline, min_effect=0.2)
        return report, {v.cell: (v.verdict, v.stop.n, v.seeds) for v in verdicts}

    local, local_verdicts = schedule()
    remote, remote_verdicts = schedule(executor=client.get_executor(pure=False))
    assert remote_verdicts == local_verdicts == {
        "tiny/GCN": ("IDENTICAL", 3, (0, 1, 2)),
        "tiny/SAGE": ("INCONCLUSIVE", 6, (0, 1, 2, 3, 4, 5))}
    # the extended seeds trained on the cluster, bit for bit the local ones
    assert [len(r.schedule.extensions) for r in (local, remote)] == [1, 1]
    assert [dumps(r.to_dict()) for r in remote.schedule.decided(remote)] == \
        [dumps(r.to_dict()) for r in local.schedule.decided(local)]
