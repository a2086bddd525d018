"""Citation tasks offline: the real download path against a local HTTP server or ``file://``
serving fabricated Planetoid files, and the catalogue auditor's recovery from damaged files."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.planetoid_fake import fake_planetoid, write_files

torch = pytest.importorskip("torch")

from pytest_graphnetz import run_benchmark  # noqa: E402
from pytest_graphnetz.runner.tasks import catalogue  # noqa: E402
from pytest_graphnetz.runner.tasks.audit import (  # noqa: E402
    MANIFEST,
    CorruptDatasetError,
    DatasetUnavailableError,
)
from pytest_graphnetz.runner.tasks.citation import URL_ENV, load_planetoid  # noqa: E402
from tests.helpers.tiny import gcn  # noqa: E402

FILES = fake_planetoid("cora")


class FileServer:
    """Serves ``files`` on 127.0.0.1; the first ``damage`` responses per file are damaged.

    ``mode="short"``: the full Content-Length is announced, half the body sent, the connection
    closed (a dropped download). ``mode="corrupt"``: half the body with a matching length (a
    server or proxy that serves a broken file; only parsing can tell).
    """

    def __init__(self, files: dict, *, damage: int = 0, mode: str = "short",
                 only: str | None = None) -> None:
        self.files, self.damage, self.mode, self.only = files, damage, mode, only
        self.requests: Counter = Counter()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.lstrip("/")
                if name not in server.files:
                    self.send_error(404)
                    return
                server.requests[name] += 1
                body = server.files[name]
                damaged = server.requests[name] <= server.damage and server.only in (None, name)
                sent = body[: len(body) // 2] if damaged else body
                announced = len(body) if damaged and server.mode == "short" else len(sent)
                self.send_response(200)
                self.send_header("Content-Length", str(announced))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(sent)
                self.close_connection = True

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _raw(root) -> object:
    from pathlib import Path

    return Path(root) / "Cora" / "raw"


def test_download_over_http_then_served_from_disk(root):
    with FileServer(FILES) as server:
        data = load_planetoid(root, name="Cora", url=server.url)
        assert data.num_nodes == 630 and data.x.shape == (630, 12)
        assert (int(data.train_mask.sum()), int(data.val_mask.sum()),
                int(data.test_mask.sum())) == (30, 500, 100)
        assert server.requests == Counter({name: 1 for name in FILES})
        again = load_planetoid(root, name="Cora", url=server.url)
        assert server.requests == Counter({name: 1 for name in FILES})  # no new request
    assert torch.equal(again.x, data.x) and torch.equal(again.edge_index, data.edge_index)
    assert sorted(p.name for p in _raw(root).iterdir()) == sorted([*FILES, MANIFEST])


def test_catalogue_tasks_through_file_url(root, tmp_path, monkeypatch):
    """``cora`` (public split, same data every seed) and ``cora_random`` (split per seed)."""
    source = write_files(FILES, tmp_path / "mirror")
    monkeypatch.setenv(URL_ENV, source.as_uri())
    tasks = {name: replace(catalogue()[name](), epochs=30) for name in ("cora", "cora_random")}
    report = run_benchmark(tasks, {"GCN": gcn}, seeds=[0, 1], device="cpu", root=root)
    assert (tmp_path / "data" / "citation" / "cora" / "Cora" / "raw" / "ind.cora.graph").is_file()
    assert report.data_fingerprint("cora", 0) == report.data_fingerprint("cora", 1)
    assert report.data_fingerprint("cora_random", 0) != report.data_fingerprint("cora_random", 1)
    acc = report.X
    # Each node carries its class's indicator word among noise: learnable, chance is 1/3.
    assert (acc > 0.6).all() and (acc <= 1.0).all(), acc


def test_unreachable_source_says_so_in_one_line(root):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DatasetUnavailableError) as info:
        load_planetoid(root, name="Cora", url=f"http://127.0.0.1:{port}")
    message = str(info.value)
    assert "\n" not in message
    assert f"cannot download http://127.0.0.1:{port}/ind.cora.x" in message
    assert str(_raw(root)) in message and "offline?" in message
    assert not any(_raw(root).glob("*.part"))  # nothing half-written left behind


def test_truncated_first_response_is_cleared_and_retried(root):
    with FileServer(FILES, damage=1, mode="short") as server:
        data = load_planetoid(root, name="Cora", url=server.url)
    assert data.num_nodes == 630
    # Every file was cut short once (detected from Content-Length), then fetched whole.
    assert server.requests == Counter({name: 2 for name in FILES})
    assert not [p for p in _raw(root).iterdir() if p.name.startswith(".")]


def test_corrupt_file_with_a_consistent_length_is_caught_by_parsing(root):
    with FileServer(FILES, damage=1, mode="corrupt", only="ind.cora.graph") as server:
        data = load_planetoid(root, name="Cora", url=server.url)
    assert data.num_nodes == 630
    # The damaged pickle failed to parse; the raw files were cleared and fetched again.
    assert server.requests["ind.cora.graph"] == 2


def test_damaged_files_on_disk_are_detected(root):
    with FileServer(FILES) as server:
        first = load_planetoid(root, name="Cora", url=server.url)
        processed = _raw(root).parent / "processed" / "data.pt"
        processed.write_bytes(processed.read_bytes()[:100])  # a half-written processed file
        assert torch.equal(load_planetoid(root, name="Cora", url=server.url).x, first.x)
        assert server.requests == Counter({name: 1 for name in FILES})  # rebuilt from raw

        allx = _raw(root) / "ind.cora.allx"
        allx.write_bytes(allx.read_bytes()[:-10])  # fails its manifest size check
        assert torch.equal(load_planetoid(root, name="Cora", url=server.url).x, first.x)
        assert server.requests["ind.cora.allx"] == 2


def test_retries_are_bounded(root):
    with FileServer(FILES, damage=10, mode="short") as server, \
            pytest.raises(CorruptDatasetError, match="still damaged after 2 attempts"):
        load_planetoid(root, name="Cora", url=server.url, attempts=2)
    assert server.requests["ind.cora.x"] == 2


def test_a_download_cut_short_without_content_length_is_not_trusted(tmp_path: Path) -> None:
    import http.server
    import threading

    from pytest_graphnetz.runner.tasks.audit import MANIFEST, download

    body = bytes(range(256)) * 64
    served = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # HTTP/1.0, no Content-Length: the body ends at the close
            served.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body[: len(body) // 3] if len(served) == 1 else body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        path = download(f"http://127.0.0.1:{server.server_address[1]}/data.bin",
                        tmp_path / "data.bin")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert path.read_bytes() == body  # the cut first response was refused, not recorded
    assert len(served) == 4  # cut + whole (differ: retry), then whole + whole (agree)
    assert json.loads((tmp_path / MANIFEST).read_text())["data.bin"]["size"] == len(body)
