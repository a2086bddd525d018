"""The example project's CI gates: "did this change make a model worse?" on paired seeds.

Run with ``pytest examples`` (10 seeds, the default) or ``pytest examples --graphnetz-seeds=5``
for a quicker, less sensitive local check.
Baselines live in ``baselines/test_gates/``; after an intended change, refresh them with
``graphnetz refresh examples --graphnetz-seeds=10`` and commit the JSON diff.
"""

from __future__ import annotations

import pytest
from models import MODELS, gcn, sage

from pytest_graphnetz import assert_ci_width, assert_not_worse

pytestmark = pytest.mark.graphnetz


def test_social_models_not_worse(graphnetz_run, graphnetz_baseline):
    """Every model on Zachary's karate club: a smoke gate (8 test nodes per seed)."""
    report = graphnetz_run("social", MODELS)
    assert_not_worse(report, graphnetz_baseline())


def test_homophilous_not_worse(graphnetz_run, graphnetz_baseline):
    """GCN and GraphSAGE on a 1600-node homophilous block model, one point of tolerance."""
    report = graphnetz_run(["csbm_homophilous"], {"GCN": gcn, "GraphSAGE": sage})
    assert_not_worse(report, graphnetz_baseline(), margin=0.01)


def test_homophilous_intervals_are_informative(graphnetz_run):
    """The block-model accuracy must be pinned to within 8 points (else: more seeds)."""
    report = graphnetz_run(["csbm_homophilous"], {"GCN": gcn, "GraphSAGE": sage})
    assert_ci_width(report, 0.08)
