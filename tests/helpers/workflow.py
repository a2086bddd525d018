"""What tests/fast/test_workflow.py and tests/slow/test_workflow_slow.py share."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "graphnetz.yml"


def load_workflow() -> dict:
    from ruamel.yaml import YAML  # check-jsonschema's YAML reader (YAML 1.2: `on` stays a key)

    return YAML(typ="safe").load(WORKFLOW.read_text())


def step(workflow: dict, name: str) -> dict:
    (found,) = [s for s in workflow["jobs"]["gates"]["steps"] if s.get("name", "").startswith(name)]
    return found


COMMENT_WORKFLOW = WORKFLOW.with_name("graphnetz-comment.yml")


def YAML_LOAD(path: Path) -> dict:  # noqa: N802 - reads as the constant it loads
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(path.read_text())
