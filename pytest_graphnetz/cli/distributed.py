"""``graphnetz plan`` (the triples a run lacks, and the shard matrix for a CI) and ``graphnetz
cache`` (a maintainer's look after a triple cache, local or remote: list and size by producer,
purge by producer, age or key, explain why two keys differ)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

DEFAULT_DIR = Path(".pytest_cache") / "d" / "graphnetz"


def plan_arguments(rest: Sequence[str]) -> tuple[int | None, list[str]]:
    """``(shards, pytest args)`` of ``graphnetz plan [--shards N] [PYTEST ARGS]``."""
    rest, shards = list(rest), None
    for i, arg in enumerate(rest):
        if arg == "--shards" or arg.startswith("--shards="):
            value = arg.partition("=")[2] if "=" in arg else (
                rest[i + 1] if i + 1 < len(rest) else "")
            del rest[i:i + (1 if "=" in arg else 2)]
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"--shards: expected a whole number >= 1 (the CI's shard "
                                 f"jobs), got {value!r}")
            shards = int(value)
            break
    return shards, rest


def cmd_plan(args: argparse.Namespace) -> int:
    """Run pytest with ``--graphnetz-plan`` (nothing trains, nothing is gated; its output goes
    to stderr) and print the missing triples as JSON on stdout: ``missing`` (task, model, seed,
    cost, test, and the shard of N that trains it), ``count``, and ``matrix``
    (``{"shard": ["1/N", ...]}``, the shards with work, for a GitHub Actions matrix)."""
    import pytest

    with tempfile.TemporaryDirectory(prefix="graphnetz-plan-") as scratch:
        target = Path(scratch) / "plan.json"
        extra = [] if args.shards is None else [f"--graphnetz-shard=1/{args.shards}"]
        with contextlib.redirect_stdout(sys.stderr):
            status = int(pytest.main([*args.pytest_args, f"--graphnetz-plan={target}",
                                      *extra]))
        # 1: a gate whose triples were all cached judged them (an adaptive gate must, to ask
        # for its next look); the plan is still whole.
        if status not in (0, 1, 5) or not target.is_file():
            print(f"graphnetz plan: pytest exited with {status}; no plan", file=sys.stderr)
            return 2
        found = json.loads(target.read_text(encoding="utf-8"))
    missing = found["missing"]
    shards = found["shards_with_work"]
    print(json.dumps({"count": len(missing), "missing": missing,
                      "matrix": {"shard": [f"{s}/{args.shards}" for s in shards]}},
                     indent=1))
    return 0


# -- graphnetz cache ----------------------------------------------------------------------------


def cmd_cache(args: argparse.Namespace) -> int:
    """``graphnetz cache list|size|purge|explain`` on ``--dir`` (default: pytest's cache
    under the current directory) or ``--remote URL``."""
    entries = list(_entries(args))
    if args.action in ("list", "size"):
        groups: dict[str, list[int]] = {}
        for entry in entries:
            counts = groups.setdefault(entry["producer"], [0, 0])
            counts[0] += 1
            counts[1] += entry["size"]
        total = [sum(c[0] for c in groups.values()), sum(c[1] for c in groups.values())]
        if args.action == "list":
            for name, (count, size) in sorted(groups.items()):
                print(f"{count:6d} triples  {_bytes(size):>9}  {name}")
        print(f"{total[0]:6d} triples  {_bytes(total[1]):>9}  in all ({_where(args)})")
        return 0
    if args.action == "purge":
        return _purge(args, entries)
    return _explain(args, entries)


def _where(args: argparse.Namespace) -> str:
    return args.remote if args.remote else str(args.dir)


def _entries(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Each entry: ``key``, ``size``, ``modified``, ``producer`` (one line), ``fields``."""
    if args.remote:
        from pytest_graphnetz.runner.remote import FsspecStore, check_url, iter_objects

        store = FsspecStore(check_url(args.remote, option="--remote"))
        for info, obj in iter_objects(store):
            made = (obj or {}).get("producer") or {}
            entry = (obj or {}).get("entry") or {}
            yield {"key": info.name[:-5], "size": info.size, "modified": info.modified,
                   "producer": _producer_line(made), "fields": entry.get("fields"),
                   "made": made}
        return
    from pytest_graphnetz.report.codec import read_json

    directory = Path(args.dir)
    if not directory.is_dir():
        raise OSError(f"no triple cache at {directory}: name one with --dir (or --remote URL)")
    for path in sorted(directory.glob("*.json")):
        try:
            entry = read_json(path, what="cache entry")
        except (OSError, ValueError, RecursionError):
            entry = {}
        fields = entry.get("fields") if isinstance(entry, dict) else None
        device = (fields or {}).get("device") or {}
        stat = path.stat()
        yield {"key": path.stem, "size": stat.st_size, "modified": stat.st_mtime,
               "producer": f"local ({device.get('name', 'unknown device')})",
               "fields": fields, "made": {}}


def _producer_line(made: dict[str, Any]) -> str:
    versions = made.get("versions") or {}
    parts = [str(made.get("host") or "unknown host")]
    if made.get("ci_run"):
        parts.append(str(made["ci_run"]))
    parts += [str(made.get("device") or "unknown device"),
              f"torch {versions.get('torch', '?')}"]
    return ", ".join(parts)


def _bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def _purge(args: argparse.Namespace, entries: list[dict[str, Any]]) -> int:
    if not (args.producer or args.older_than is not None or args.key):
        raise ValueError("purge needs what to remove: --producer TEXT (a substring of the "
                         "producer `graphnetz cache list` shows), --older-than DAYS or --key KEY")
    now = time.time()
    chosen = [e for e in entries
              if (not args.key or e["key"] in args.key)
              and (not args.producer or args.producer in e["producer"])
              and (args.older_than is None or (e["modified"] is not None
                                               and now - e["modified"] > args.older_than * 86400))]
    for entry in chosen:
        print(f"{'removing' if args.yes else 'would remove'} {entry['key']}  {entry['producer']}")
    if not args.yes:
        print(f"{len(chosen)} triple(s) match; rerun with --yes to remove them")
        return 0
    if args.remote:
        from pytest_graphnetz.runner.remote import FsspecStore

        store = FsspecStore(args.remote)
        for entry in chosen:
            store.delete(f"{entry['key']}.json")
    else:
        for entry in chosen:
            (Path(args.dir) / f"{entry['key']}.json").unlink(missing_ok=True)
    print(f"removed {len(chosen)} triple(s) from {_where(args)}")
    return 0


def _explain(args: argparse.Namespace, entries: list[dict[str, Any]]) -> int:
    """What differs between the key fields of two entries (by key, or a unique prefix)."""
    if len(args.key or []) != 2:
        raise ValueError("explain needs two keys: --key KEY_A --key KEY_B (a unique prefix of "
                         "each will do; `graphnetz cache list` and the cache's file names show "
                         "them)")
    found = []
    for prefix in args.key:
        match = [e for e in entries if e["key"].startswith(prefix)]
        if len(match) != 1:
            raise ValueError(f"--key {prefix}: {len(match)} entries match in {_where(args)}; "
                             "give one that names exactly one")
        if not isinstance(match[0]["fields"], dict):
            raise ValueError(f"{match[0]['key']}: the entry keeps no key fields to compare")
        found.append(match[0])
    a, b = (_flatten(e["fields"]) for e in found)
    differ = sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))
    if not differ:
        print("the two entries' key fields are the same")
        return 0
    print(f"{len(differ)} key field(s) differ between {found[0]['key'][:12]} (A) and "
          f"{found[1]['key'][:12]} (B):")
    for name in differ:
        print(f"  {name}:\n    A: {_short(a.get(name))}\n    B: {_short(b.get(name))}")
    return 0


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as ``{"a.b.c": leaf}``; lists are leaves."""
    if not isinstance(value, dict):
        return {prefix or "(value)": value}
    flat: dict[str, Any] = {}
    for name, inner in value.items():
        flat.update(_flatten(inner, f"{prefix}.{name}" if prefix else str(name)))
    return flat


def _short(value: Any, limit: int = 160) -> str:
    text = "(absent)" if value is None else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def add_parsers(sub: Any) -> None:
    """The ``plan`` and ``cache`` subcommands on ``sub`` (argparse's subparsers)."""
    plan = sub.add_parser(
        "plan", help="the triples a run lacks as JSON, and the shard matrix: "
                     "[--shards N] [PYTEST ARGS] (nothing trains)")
    plan.add_argument("pytest_args", nargs=argparse.REMAINDER,
                      help="passed to pytest (e.g. tests/ --graphnetz-seeds=20)")
    plan.set_defaults(func=cmd_plan, shards=None)
    cache = sub.add_parser(
        "cache", help="look after a triple cache: list|size by producer, purge by producer, "
                      "age or key, explain why two keys differ")
    cache.add_argument("action", choices=("list", "size", "purge", "explain"))
    cache.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                       help=f"a local cache directory (default {DEFAULT_DIR})")
    cache.add_argument("--remote", help="a remote cache URL (--graphnetz-remote-cache's)")
    cache.add_argument("--producer", help="purge: entries whose producer contains this text")
    cache.add_argument("--older-than", type=float, metavar="DAYS",
                       help="purge: entries written more than DAYS ago")
    cache.add_argument("--key", action="append",
                       help="purge: this entry (repeatable); explain: the two entries")
    cache.add_argument("--yes", action="store_true", help="purge: remove (default: list)")
    cache.set_defaults(func=cmd_cache)


__all__ = ["add_parsers", "cmd_cache", "cmd_plan", "plan_arguments"]
