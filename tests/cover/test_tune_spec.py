"""``tune`` is the public keyword form of ``tune_with(tasks, models, space, TuneSpec)``: every
keyword is a field of the spec with the same default, and the two forms search, select and
confirm alike."""

from __future__ import annotations

import inspect
import json

import numpy as np

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.tuning import TuneSpec, tune, tune_with
from pytest_graphnetz.report.epochs import History, MetricSpec


def recording_runner(calls: list[dict]):
    """A runner without training that notes its keywords; validation rises with ``q``."""
    def run(tasks, models, *, seeds, **kw):
        calls.append({"seeds": list(seeds), **kw})
        (name, factory), = models.items()
        q = json.loads(factory.config)["q"]
        histories = {}
        for s in seeds:
            noise = np.random.default_rng(s).normal(0, 0.01, 2)
            val, test = 0.5 + 0.1 * q + noise[0], 0.8 + noise[1]
            histories[("toy", name, int(s))] = History(test=(test / 2, test), val=(val / 2, val))
        return BenchmarkReport(tasks=["toy"], models=[name], seeds=list(seeds),
                               metrics={"toy": MetricSpec.from_name("accuracy")},
                               histories=histories)
    return run


def test_every_keyword_of_tune_is_a_spec_field_with_its_default():
    keywords = {name: p.default for name, p in inspect.signature(tune).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    fields = {name: p.default for name, p in inspect.signature(TuneSpec).parameters.items()
              if name != "run_kwargs"}
    assert keywords == fields
    assert "run_kwargs" in inspect.signature(TuneSpec).parameters


def test_the_keyword_form_and_the_spec_form_tune_alike():
    space = [{"q": q, "epochs": 3 + q} for q in (0, 2, 1)]
    by_keywords: list[dict] = []
    by_spec: list[dict] = []
    a = tune("toy", {"M": dict}, space, search_seeds=2, seeds=range(4),
             runner=recording_runner(by_keywords), device="cpu")
    b = tune_with("toy", {"M": dict}, space,
                  TuneSpec(search_seeds=2, seeds=range(4), runner=recording_runner(by_spec),
                           run_kwargs={"device": "cpu"}))
    assert a.record.to_dict() == b.record.to_dict()
    assert by_keywords == by_spec
    # three search runs, then the winner's confirmation with its own epochs
    assert [c["epochs"] for c in by_spec] == [3, 5, 4, 5]
    assert all(c["device"] == "cpu" for c in by_spec)
    assert by_spec[-1]["seeds"] == [0, 1, 2, 3]
    assert b.winner == {"q": 2, "epochs": 5}
