"""The remote triple cache against real stores: a moto S3 server on loopback driven through
s3fs (tests/helpers/servers.py), and ``file://`` on a second directory. Every fault leaves the
report bit for bit what a local run gives."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.report.codec import dumps
from pytest_graphnetz.runner import remote
from pytest_graphnetz.runner.cache import CacheWarning
from tests.helpers.servers import BUCKET, moto_server, read_only_credentials, silent_server
from tests.helpers.tiny import gcn, tiny_task

URL = f"s3://{BUCKET}/graphnetz"


@pytest.fixture(autouse=True)
def _fresh_remotes(monkeypatch):
    """Each test opens its own remote (whether one is down is remembered per process)."""
    monkeypatch.delenv(remote.KEY_ENV, raising=False)
    monkeypatch.delenv(remote.TIMEOUT_ENV, raising=False)
    remote.open_remote.cache_clear()
    yield
    remote.open_remote.cache_clear()


@pytest.fixture
def s3(monkeypatch):
    with moto_server(monkeypatch) as server:
        yield server


def sweep(root, cache, url=URL, *, write=False, trainer=None, seeds=(0, 1)):
    """``(report text, {seed: status}, warnings)`` of a tiny GCN sweep with the remote."""
    statuses: dict[int, str] = {}
    task = tiny_task(trainer=trainer) if trainer else tiny_task()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run_benchmark(
            {"tiny": task}, {"GCN": gcn}, seeds=list(seeds), device="cpu", root=root,
            cache_dir=cache, remote_cache=url, remote_cache_write=write,
            progress=lambda t, m, s, status, secs: statuses.__setitem__(s, status))
    remote.open_remote.cache_clear()
    found = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    return dumps(report.to_dict()), statuses, found


@pytest.fixture
def local_text(root, tmp_path):
    """The report of the same sweep with no cache at all."""
    report = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                           root=root)
    return dumps(report.to_dict())


# -- what travels -----------------------------------------------------------------------------


def test_ci_writes_and_a_second_checkout_reads_without_writing(s3, root, tmp_path, local_text):
    written, trained, quiet = sweep(root, tmp_path / "ci", write=True)
    objects = s3.objects()
    assert trained == {0: "trained", 1: "trained"} and quiet == []
    assert len(objects) == 2 and all(k.startswith("graphnetz/triples/") for k in objects)
    made = json.loads(next(iter(objects.values())))
    assert made["producer"]["host"] and made["producer"]["versions"]["torch"]
    assert made["mac"] is None
    read, hits, quiet = sweep(root, tmp_path / "laptop")
    assert hits == {0: "cached", 1: "cached"} and quiet == []
    assert read == written == local_text
    assert s3.objects() == objects, "a reader writes nothing"
    assert len(list((tmp_path / "laptop").glob("*.json"))) == 2, "hits are copied locally"


def test_two_writers_of_one_triple_leave_one_object(s3, root, tmp_path):
    first, _, _ = sweep(root, tmp_path / "a", write=True)
    objects = s3.objects()
    second, trained, quiet = sweep(root, tmp_path / "b", write=True, seeds=(0, 1, 2))
    assert trained == {0: "cached", 1: "cached", 2: "trained"} and quiet == []
    after = s3.objects()
    assert len(after) == 3 and all(after[k] == v for k, v in objects.items())


def test_a_losing_writer_keeps_the_winners_object(tmp_path):
    store = remote.FsspecStore((tmp_path / "shared").as_uri())
    assert store.put_if_absent("a.json", b"first")
    assert not store.put_if_absent("a.json", b"second")
    assert store.get("a.json") == b"first"
    assert [o.name for o in store.list()] == ["a.json"]
    assert not list((tmp_path / "shared" / "triples").glob(".put.*")), "no temp file left"


def test_a_shared_directory_is_a_remote_too(root, tmp_path, local_text):
    url = (tmp_path / "mount").as_uri()
    sweep(root, tmp_path / "one", url, write=True)
    text, hits, quiet = sweep(root, tmp_path / "two", url)
    assert hits == {0: "cached", 1: "cached"} and quiet == [] and text == local_text


# -- faults: one warning naming the URL, local training, the same report ------------------


def test_a_server_down_at_start_costs_one_warning(root, tmp_path, local_text, monkeypatch):
    from tests.helpers.servers import aws_environment, free_port

    aws_environment(monkeypatch, f"http://127.0.0.1:{free_port()}")
    text, trained, found = sweep(root, tmp_path / "c", write=True)
    assert trained == {0: "trained", 1: "trained"} and text == local_text
    assert len(found) == 1 and URL in found[0] and "not used for the rest" in found[0]


def test_a_server_down_mid_upload(s3, root, tmp_path, local_text):
    def stop_then_train(model, data, *, task, device):
        s3.server.stop()   # the store goes away while the triple trains
        from pytest_graphnetz.runner.training import builtin

        return builtin(task.kind).train(model, data, task=task, device=device)

    text, trained, found = sweep(root, tmp_path / "c", write=True, trainer=stop_then_train)
    reference, _, _ = sweep(root, tmp_path / "ref", None, trainer=stop_then_train)
    assert trained == {0: "trained", 1: "trained"} and text == reference
    assert len(found) == 1 and URL in found[0]


def test_a_hung_server_is_bounded(root, tmp_path, local_text, monkeypatch):
    from tests.helpers.servers import aws_environment

    monkeypatch.setenv(remote.TIMEOUT_ENV, "1")
    with silent_server() as endpoint:
        aws_environment(monkeypatch, endpoint)
        text, trained, found = sweep(root, tmp_path / "c")
    assert trained == {0: "trained", 1: "trained"} and text == local_text
    assert len(found) == 1 and "longer than 1 s" in found[0]


def test_a_forbidden_write_reads_on(s3, root, tmp_path, local_text, monkeypatch):
    sweep(root, tmp_path / "ci", write=True, seeds=(0,))
    with read_only_credentials(s3, monkeypatch):
        text, statuses, found = sweep(root, tmp_path / "c", write=True)
    assert statuses == {0: "cached", 1: "trained"} and text == local_text
    written = [w for w in found if "cannot be written" in w]
    assert len(written) == 1 and "Access Denied" in written[0]
    # moto, like S3, answers a reader without ListBucket rights 403 for a missing object
    assert len(found) <= 2
    assert len(s3.objects()) == 1


@pytest.mark.parametrize("damage", ["truncated", "edited", "other key"])
def test_a_damaged_object_is_retrained_never_served(s3, root, tmp_path, local_text, damage):
    sweep(root, tmp_path / "ci", write=True)
    s3c = s3.client()
    names = sorted(s3.objects())
    data = s3.objects()[names[0]]
    if damage == "truncated":
        bad = data[: len(data) // 2]
    elif damage == "edited":
        obj = json.loads(data)
        obj["entry"]["history"]["test"][-1] = 1.0
        bad = json.dumps(obj).encode()
    else:
        bad = s3.objects()[names[1]]
    s3c.put_object(Bucket=BUCKET, Key=names[0], Body=bad)
    text, statuses, found = sweep(root, tmp_path / "c")
    assert sorted(statuses.values()) == ["cached", "trained"] and text == local_text
    assert len(found) == 1 and "is not served" in found[0] and "cache purge" in found[0]


# -- the team key -----------------------------------------------------------------------------


def test_a_team_key_refuses_unauthenticated_objects(s3, root, tmp_path, local_text,
                                                     monkeypatch):
    sweep(root, tmp_path / "anyone", write=True)
    monkeypatch.setenv(remote.KEY_ENV, "ci-secret")
    text, statuses, found = sweep(root, tmp_path / "reader")
    assert statuses == {0: "trained", 1: "trained"} and text == local_text
    assert len(found) == 2 and all("not authenticated" in w for w in found)


def test_a_team_key_trusts_its_writers(root, tmp_path, local_text, monkeypatch):
    url = (tmp_path / "mount").as_uri()
    monkeypatch.setenv(remote.KEY_ENV, "ci-secret")
    sweep(root, tmp_path / "ci", url, write=True)
    text, statuses, found = sweep(root, tmp_path / "reader", url)
    assert statuses == {0: "cached", 1: "cached"} and found == [] and text == local_text
    monkeypatch.setenv(remote.KEY_ENV, "another-secret")
    _, statuses, found = sweep(root, tmp_path / "stranger", url)
    assert statuses == {0: "trained", 1: "trained"}
    assert all("HMAC does not match" in w for w in found) and len(found) == 2


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "says"), [
    ("team-bucket/graphnetz", "is not a URL with a location"),
    ("s3://", "is not a URL with a location"),
    ("nosuch://bucket/x", "knows no protocol 'nosuch'"),
    ("gcs://bucket/x", 'pip install "pytest-graphnetz[remote]"'),
])
def test_bad_urls_name_the_option_the_value_and_the_fix(url, says):
    with pytest.raises(remote.RemoteCacheError, match=r"^`--graphnetz-remote-cache`") as err:
        remote.check_url(url)
    assert says in str(err.value)


def test_missing_credentials_are_a_usage_error(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(remote.RemoteCacheError, match="no AWS credentials found"):
        remote.check_url(URL)


def test_a_bad_url_is_a_usage_error_at_session_start(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--graphnetz-remote-cache=nosuch://x/y")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*`--graphnetz-remote-cache`=nosuch://x/y: fsspec knows no "
                                 "protocol 'nosuch'*"])


def test_the_remote_needs_a_local_cache(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(f"--graphnetz-remote-cache={(pytester.path / 'm').as_uri()}",
                                "--graphnetz-no-cache")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs the local cache*"])


def test_importing_the_plugin_imports_no_fsspec():
    import subprocess
    import sys

    code = ("import sys, pytest_graphnetz.plugin; "
            "print(sorted(m for m in ('fsspec', 's3fs') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[2])
    assert out.stdout.strip() == "[]"


class FullStore:
    """A store out of space: reads work, every write fails with ENOSPC (as a full shared mount
    or a bucket over its quota answers)."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def get(self, name):
        return self.objects.get(name)

    def put_if_absent(self, name, data):
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")

    def list(self):
        return []

    def delete(self, name):
        self.objects.pop(name, None)


def test_a_full_store_is_read_and_no_longer_written(tmp_path):
    from pytest_graphnetz.report.epochs import History
    from pytest_graphnetz.runner.cache import TripleCache, make_key

    store = FullStore()
    tier = remote.RemoteCache(remote.RemoteSettings("memory://full", write=True), store=store)
    cache = TripleCache(tmp_path / "c", remote=tier)
    key, other = make_key({"a": 1}), make_key({"a": 2})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.get_or_compute(key, lambda: History(test=(0.5,)))
        cache.get_or_compute(other, lambda: History(test=(0.25,)))
    found = [str(w.message) for w in caught]
    assert len(found) == 1 and "cannot be written" in found[0] and "No space" in found[0]
    assert tier.read_only is not None and tier.down is None, "still read"
    store.objects[f"{key}.json"] = remote.dumps_object(remote.seal(
        key, json.loads((tmp_path / "c" / f"{key}.json").read_text()), {}, None))
    fresh = TripleCache(tmp_path / "fresh", remote=tier)
    assert fresh.get_or_compute(key, lambda: History(test=(0.0,)))[1] is True


def test_a_forged_object_with_a_valid_digest_is_caught_by_the_verify_sample(root, tmp_path,
                                                                           local_text):
    """Someone who can write the store replaces both seeds' values consistently and re-digests
    them (no team key): the verify sample retrains one seed, sees the difference, and the cell
    is retrained here, never served from the store again."""
    import hashlib

    url = (tmp_path / "mount").as_uri()
    sweep(root, tmp_path / "ci", url, write=True)
    for path in (tmp_path / "mount" / "triples").glob("*.json"):
        obj = json.loads(path.read_text())
        entry = obj["entry"]
        # (test values must agree with the recorded per-example outcomes: the loss is free)
        entry["history"]["train_loss"] = [0.01] * len(entry["history"]["train_loss"])
        body = {"key": obj["key"], "history": entry["history"], "depends": entry.get("depends")}
        entry["digest"] = hashlib.sha256(json.dumps(
            body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        path.chmod(0o644)
        path.write_text(json.dumps(obj))
    statuses: dict[int, str] = {}
    report = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                           root=root, cache_dir=tmp_path / "reader", remote_cache=url,
                           verify_cache=1,
                           progress=lambda t, m, s, status, secs: statuses.__setitem__(s, status))
    assert statuses == {0: "cached", 1: "cached"}, "both were served, then checked"
    assert report.protocol["cache"]["not_reproduced"] == {"tiny/GCN": [0]} or \
        report.protocol["cache"]["not_reproduced"] == {"tiny/GCN": [1]}
    report.protocol.pop("cache")
    assert dumps(report.to_dict()) == local_text


@pytest.mark.parametrize("where", ["s3", "file"])
def test_racing_writers_leave_one_object(where, s3, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    url = URL if where == "s3" else (tmp_path / "mount").as_uri()
    stores = [remote.FsspecStore(url) for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda i: stores[i].put_if_absent("k.json", f"{i}".encode()),
                            range(8)))
    assert won.count(True) == 1
    assert stores[0].get("k.json") == str(won.index(True)).encode()
