"""`graphnetz cache`: list and size by producer, purge by producer, age or key, explain why two
keys differ, on a local cache and on a remote one (``file://`` on a second directory)."""

from __future__ import annotations

import json
import platform

import pytest
import torch

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.cli.main import main
from pytest_graphnetz.runner import remote
from tests.helpers.tiny import gcn, tiny_task


@pytest.fixture
def caches(root, tmp_path):
    """A local cache and a remote one, each holding seeds 0 and 1 of a tiny GCN, and seed 0
    again under another matmul precision (a near-identical triple with another key)."""
    remote.open_remote.cache_clear()
    url = (tmp_path / "mount").as_uri()
    run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu", root=root,
                  cache_dir=tmp_path / "local", remote_cache=url, remote_cache_write=True)
    torch.set_float32_matmul_precision("medium")
    try:
        run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                      cache_dir=tmp_path / "local", remote_cache=url, remote_cache_write=True)
    finally:
        torch.set_float32_matmul_precision("highest")
        remote.open_remote.cache_clear()
    return tmp_path / "local", url


def test_list_and_size_by_producer(caches, capsys):
    local, url = caches
    assert main(["cache", "list", "--remote", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["3", "triples"] and platform.node() in lines[0]
    assert "torch 2." in lines[0] and lines[-1].endswith(f"in all ({url})")
    assert main(["cache", "size", "--dir", str(local)]) == 0
    assert capsys.readouterr().out.split()[:2] == ["3", "triples"]


def test_explain_names_the_field_that_differs(caches, capsys):
    local, _ = caches
    keys = sorted(p.stem for p in local.glob("*.json"))
    fields = {}
    for key in keys:
        fields[key] = json.loads((local / f"{key}.json").read_text())["fields"]
    zero = [k for k in keys if fields[k]["seed"] == 0]
    assert main(["cache", "explain", "--dir", str(local), "--key", zero[0][:10],
                 "--key", zero[1][:10]]) == 0
    out = capsys.readouterr().out
    assert "numerics.float32_matmul_precision" in out and "seed" not in out
    assert '"medium"' in out and '"highest"' in out


def test_purge_by_producer_lists_first_then_removes(caches, capsys):
    _, url = caches
    assert main(["cache", "purge", "--remote", url, "--producer", platform.node()]) == 0
    assert "3 triple(s) match; rerun with --yes" in capsys.readouterr().out
    assert len(remote.FsspecStore(url).list()) == 3
    assert main(["cache", "purge", "--remote", url, "--producer", platform.node(),
                 "--yes"]) == 0
    assert remote.FsspecStore(url).list() == []


def test_purge_by_age_and_key_locally(caches, capsys):
    local, _ = caches
    assert main(["cache", "purge", "--dir", str(local), "--older-than", "1", "--yes"]) == 0
    assert len(list(local.glob("*.json"))) == 3, "nothing is a day old"
    key = sorted(p.stem for p in local.glob("*.json"))[0]
    assert main(["cache", "purge", "--dir", str(local), "--key", key, "--yes"]) == 0
    assert not (local / f"{key}.json").exists() and len(list(local.glob("*.json"))) == 2


def test_purge_without_a_criterion_is_refused(caches, capsys):
    local, _ = caches
    assert main(["cache", "purge", "--dir", str(local)]) == 2
    assert "purge needs what to remove" in capsys.readouterr().err
