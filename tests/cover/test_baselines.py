"""The baseline store and the ratchet: paths, errors, the reviewable file format and its
migration, merging (in git too), locking, unused baselines; most of it through real pytest."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_graphnetz import BenchmarkReport, History, MetricSpec
from pytest_graphnetz.gates.refreshing.baselines import (
    BaselineError,
    BaselineFormatError,
    BaselineHandle,
    BaselineMissingError,
    BaselineSchemaError,
    default_path,
    load_baseline,
    read_baseline,
    write_baseline,
)
from pytest_graphnetz.report.schema import VALUES_SCHEMA_VERSION

pytest.importorskip("scipy.stats")
import subprocess

import pytest_graphnetz.gates as gates  # noqa: E402  (loaded once: see test_plugin.py)
from pytest_graphnetz.gates.refreshing.ratchet import refresh  # noqa: E402
from tests.helpers.reports import judge, report

ROOT = Path(__file__).resolve().parents[2]
LEGACY = Path(__file__).parents[1] / "data" / "legacy_test_social_models_not_worse.json"


def same_values(a: BenchmarkReport, b: BenchmarkReport) -> bool:
    return all(np.array_equal(a.values(t, m, epoch_selection=rule, strict=False),
                              b.values(t, m, epoch_selection=rule, strict=False), equal_nan=True)
               for t in a.tasks for m in a.models for rule in ("final", "best_val"))


# -- paths ----------------------------------------------------------------------------------------


def test_default_path_is_injective_and_stays_in_its_directory(tmp_path) -> None:
    assert default_path(tmp_path, "test_models", "test_gcn") == \
        tmp_path / "test_models" / "test_gcn.json"
    # ids that used to collapse onto one file (test_cfg[a_b].json) now have one each
    names = ["test_cfg[a/b]", "test_cfg[a b]", "test_cfg[a_b]", "test_cfg[a%2Fb]",
             "test_cfg[a\tb]", "test_cfg[a:b]", "test_cfg[ä b]"]
    paths = [default_path(tmp_path, "m", n) for n in names]
    assert len(set(paths)) == len(names)
    assert paths[0].name == "test_cfg[a%2Fb].json" and paths[1].name == "test_cfg[a%20b].json"
    assert paths[3].name == "test_cfg[a%252Fb].json"
    for name in ("../up", "/abs", "a\\b", ".."):
        assert default_path(tmp_path, "m", name).parent == tmp_path / "m"


# -- reading: each problem its own error -----------------------------------------------------------


def test_each_problem_has_its_own_error(tmp_path) -> None:
    path = tmp_path / "b.json"
    with pytest.raises(BaselineMissingError, match="create it with `pytest t.py::x --up`"):
        load_baseline(path, update_command="pytest t.py::x --up")
    path.write_text("{not json")
    with pytest.raises(BaselineFormatError, match="cannot be read: .*not valid JSON") as info:
        load_baseline(path)
    assert not isinstance(info.value, BaselineSchemaError)
    data = report().to_values_dict()
    data["schema_version"] = VALUES_SCHEMA_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineSchemaError, match=f"newer pytest-graphnetz .*version "
                                                  f"{VALUES_SCHEMA_VERSION + 1}.*Upgrade"):
        load_baseline(path)
    data["schema_version"] = VALUES_SCHEMA_VERSION
    del data["models"]["GCN"]["tasks"]["karate"]["values"]["final"][0]
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineFormatError, match="karate/GCN: `final` has 3 values for 4 seeds"):
        load_baseline(path)


# -- the reviewable format -------------------------------------------------------------------------


def two_rule_report() -> BenchmarkReport:
    """Histories with a validation series, float32 values, a diverged seed, an MAE task."""
    rng = np.random.default_rng(0)
    histories = {}
    for t in ("karate", "zinc"):
        for m in ("GCN", "GAT"):
            for s in range(5):
                test = rng.random(6).astype(np.float32).tolist()
                if (t, m, s) == ("karate", "GAT", 3):
                    test[-1] = float("nan")
                histories[(t, m, s)] = History(test=test, val=rng.random(6).tolist(),
                                               train_loss=rng.random(6).tolist())
    from pytest_graphnetz import MetricSpec

    return BenchmarkReport(
        tasks=["karate", "zinc"], models=["GCN", "GAT"], seeds=range(5),
        metrics={"karate": MetricSpec("accuracy", True), "zinc": MetricSpec("mae", False)},
        histories=histories, protocol={"device": {"kind": "cpu"}, "tasks": {"zinc": {"e": 6}},
                                       "models": {"GCN": {"zinc": {"repr": "GCN()",
                                                                   "parameters": 7}}}},
        fingerprints={"data": {"karate": {s: f"d{s}" for s in range(5)}},
                      "model": {"GCN": {s: f"m{s}" for s in range(5)}}})


def test_values_form_keeps_every_number_of_both_epoch_rules(tmp_path) -> None:
    original = two_rule_report()
    path = write_baseline(tmp_path / "b.json", original, {})
    back = load_baseline(path)
    assert same_values(back, original)
    assert back.metric("zinc").higher_is_better is False
    assert back.data_fingerprint("karate", 3) == "d3"
    assert back.fingerprints["model"]["GCN"][4] == "m4"
    assert back.protocol["device"] == {"kind": "cpu"}
    assert back.protocol["models"]["GCN"]["zinc"] == {"repr": "GCN()", "parameters": 7}
    assert back.protocol["tasks"]["zinc"] == {"e": 6}
    # a values-only baseline written again is the same file (stable, diffable)
    again = write_baseline(tmp_path / "c.json", back, {})
    assert again.read_bytes() == path.read_bytes()
    # every statistic works on it: the gate reads IDENTICAL against the original
    assert {v.verdict for v in judge(original, back, "b")} == {"IDENTICAL"}


def test_a_task_without_validation_series_keeps_best_val_unsupported(tmp_path) -> None:
    back = load_baseline(write_baseline(tmp_path / "b.json", report(), {}))
    assert back.epoch_selection_support() == {"karate": False}
    data = json.loads((tmp_path / "b.json").read_text())
    assert list(data["models"]["GCN"]["tasks"]["karate"]["values"]) == ["final"]


def test_todays_baseline_files_still_load_and_migrate_bit_for_bit(tmp_path) -> None:
    """The file committed before this format (a full report, 206 KB for 3 models × 10 seeds)."""
    legacy = read_baseline(LEGACY)
    assert legacy.legacy and legacy.anchors == {}
    old = BenchmarkReport.from_json(LEGACY)
    assert same_values(legacy.report, old)
    # a refresh with the same numbers migrates it: ≤ 10 KB, anchors = the old values
    handle = BaselineHandle(tmp_path / "b.json", update=True)
    shutil.copy(LEGACY, handle.path)
    outcome = refresh(handle, old, judge)
    assert outcome.written and {v.verdict for v in outcome.previous} == {"IDENTICAL"}
    size = handle.path.stat().st_size
    assert size <= 10_000 < LEGACY.stat().st_size, size
    stored = read_baseline(handle.path)
    assert not stored.legacy and same_values(stored.report, old)
    assert stored.report.fingerprints == old.fingerprints
    for (t, m), anchor in stored.anchors.items():
        np.testing.assert_array_equal(anchor.final, old.values(t, m, epoch_selection="final"))


def _v1_numbers(vectors: dict, rule: str) -> np.ndarray:
    """A version-1 cell's stored numbers, read without the package's reader."""
    doubles = np.array([float(v) for v in vectors[rule]])
    return doubles.astype(np.float32).astype(np.float64) if vectors.get("float32") else doubles


def test_old_format_baselines_load_as_their_new_format_does(tmp_path) -> None:
    """The committed example baselines are version 1 (`final`/`best_val` beside a cell's other
    keys); written again they are version 2 (`values` by rule name), and both read the same."""
    files = sorted((ROOT / "baselines").glob("*/*.json"))
    assert files
    for path in files:
        raw = json.loads(path.read_text())
        assert raw["schema_version"] == 1, f"{path} is no longer an old-format file"
        old = read_baseline(path)
        new_path = write_baseline(tmp_path / path.name, old.report, old.anchors)
        written = json.loads(new_path.read_text())
        assert written["schema_version"] == VALUES_SCHEMA_VERSION == 2
        new = read_baseline(new_path)
        assert new.report == old.report
        assert new.report.epoch_selection_support() == old.report.epoch_selection_support()
        for model, block in raw["models"].items():
            for task, cell in block["tasks"].items():
                rules = [r for r in ("final", "best_val") if cell[r] is not None]
                assert set(written["models"][model]["tasks"][task]["values"]) == \
                    {*rules, "float32"}
                for rule in rules:
                    expected = _v1_numbers(cell, rule).tobytes()
                    for stored in (old, new):
                        got = stored.report.values(task, model, epoch_selection=rule)
                        assert got.tobytes() == expected, (path, task, model, rule)
                    anchor = _v1_numbers(cell["anchor"], rule).tobytes()
                    assert old.anchors[(task, model)].values[rule].tobytes() == anchor
                    assert new.anchors[(task, model)].values[rule].tobytes() == anchor
        assert str(new.report.summary()) == str(old.report.summary())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_baseline_round_trip_keeps_every_value_bit_for_bit(data, tmp_path_factory) -> None:
    n_seeds = data.draw(st.integers(1, 4))
    float32 = data.draw(st.booleans())
    unit = st.floats(0.0, 1.0, width=32 if float32 else 64)  # -0.0, subnormals included
    value = st.one_of(unit, st.just(float("nan")))
    histories = {}
    for s in range(n_seeds):
        test = data.draw(st.lists(value, min_size=1, max_size=3))
        val = data.draw(st.lists(unit, min_size=len(test), max_size=len(test)))
        histories[("karate", "GCN", s)] = History(test=test, val=val)
    original = BenchmarkReport(tasks=["karate"], models=["GCN"], seeds=range(n_seeds),
                               metrics={"karate": MetricSpec("accuracy", True)},
                               histories=histories)
    path = tmp_path_factory.mktemp("b") / "b.json"
    write_baseline(path, original, {})
    back = read_baseline(path)
    for rule in ("final", "best_val"):
        want = original.values("karate", "GCN", epoch_selection=rule)
        assert back.report.values("karate", "GCN", epoch_selection=rule).tobytes() == \
            want.tobytes()
    again = write_baseline(path.with_name("c.json"), back.report, back.anchors)
    assert again.read_bytes() == path.read_bytes()


def test_committed_example_baselines_are_reviewable_and_hold_todays_numbers() -> None:
    files = sorted((ROOT / "baselines").glob("*/*.json"))
    assert files, "the example baselines are committed"
    for path in files:
        text = path.read_text()
        stored = read_baseline(path)
        assert not stored.legacy, f"{path} is in the old format"
        assert "histories" not in json.loads(text)
        assert len(text) <= 10_000, (path, len(text))
        for task in stored.report.tasks:
            for model in stored.report.models:
                info = stored.report.protocol["models"][model][task]
                assert info["repr"].startswith(model[:3]) or "(" in info["repr"]
                assert info["parameters"] > 0
                assert (task, model) in stored.anchors
    # the social gate's numbers are exactly those of the file they replace
    social = load_baseline(ROOT / "baselines" / "test_gates" / "test_social_models_not_worse.json")
    assert same_values(social, BenchmarkReport.from_json(LEGACY))


def test_a_change_to_one_model_changes_only_its_lines(tmp_path) -> None:
    handle = BaselineHandle(tmp_path / "b.json", update=True, force=True)
    refresh(handle, report(models=("GAT", "GCN", "SAGE"), seeds=range(10)), judge)
    before = handle.path.read_text().splitlines()
    better = report(models=("GCN",), seeds=range(10), offset=0.1)
    refresh(BaselineHandle(handle.path, update=True), better, judge)
    after = handle.path.read_text().splitlines()
    # lines of `before` replaced or deleted, and where lines were inserted (the cell's refresh
    # record may change its length)
    changed = [i for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=before, b=after,
                                                                  autojunk=False).get_opcodes()
               if tag != "equal" for i in (range(i1, i2) if i2 > i1 else [i1])]
    assert changed, "the GCN values changed"
    start = before.index('    "GCN": {')
    end = before.index('    "SAGE": {')
    assert all(start < i < end for i in changed), [before[i] for i in changed]


# -- refreshing: merge cell by cell, refuse what cannot merge --------------------------------------


def test_refresh_merges_cell_by_cell(tmp_path) -> None:
    handle = BaselineHandle(tmp_path / "b.json", update=True)
    first = report(models=("GCN", "SAGE"), seeds=range(4))
    refresh(handle, first, judge)
    update = report(models=("GCN", "GAT"), seeds=range(4), offset=0.1)
    outcome = refresh(handle, update, judge)
    assert outcome.new_cells == [("karate", "GAT")]
    merged = load_baseline(handle.path)
    assert set(merged.models) == {"GCN", "SAGE", "GAT"} and merged.seeds == (0, 1, 2, 3)
    for model, source in (("GCN", update), ("SAGE", first), ("GAT", update)):
        np.testing.assert_array_equal(merged.values("karate", model),
                                      source.values("karate", model))
    refresh(handle, report(models=merged.models, seeds=range(6), offset=0.12), judge)
    assert load_baseline(handle.path).seeds == (0, 1, 2, 3, 4, 5)


def test_unmergeable_update_is_an_error(tmp_path) -> None:
    handle = BaselineHandle(tmp_path / "b.json", update=True)
    refresh(handle, report(models=("GCN",), seeds=range(4)), judge)
    before = handle.path.read_bytes()
    with pytest.raises(BaselineError, match="cannot merge .*--graphnetz-force"):
        refresh(handle, report(models=("GAT",), seeds=range(2)), judge)
    assert handle.path.read_bytes() == before


# -- the same through real pytest sessions (numbers from from_arrays: nothing trains) -------------

GATE = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

VALUES = {values}


def test_gcn(graphnetz_baseline):
    X = np.array(VALUES, dtype=float).reshape(1, 1, -1)
    report = BenchmarkReport.from_arrays(X, tasks=["{task}"], models=["GCN"],
                                         seeds=range(len(VALUES)), metric="{metric}")
    assert_not_worse(report, graphnetz_baseline(), margin={margin})
"""
BASE = [0.81, 0.83, 0.80, 0.82, 0.81, 0.84]


def gate(values, *, metric="accuracy", margin=0.0, task="karate") -> str:
    return GATE.format(values=[round(v, 6) for v in values], metric=metric, margin=margin,
                       task=task)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_model=gate(BASE))
    return pytester


def baseline_file(pytester: pytest.Pytester) -> Path:
    return pytester.path / "baselines" / "test_model" / "test_gcn.json"


def test_missing_baseline_names_the_command(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*BaselineMissingError: no baseline at *baselines/test_model/test_gcn.json: create it "
        "with `pytest test_model.py::test_gcn --graphnetz-update-baselines`*"])
    assert not baseline_file(project).exists()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "*BaselineFormatError: baseline *test_gcn.json cannot be read: *not valid JSON*"),
    ('{"schema": "pytest-graphnetz/report", "schema_version": 99}',
     "*BaselineSchemaError: baseline *test_gcn.json was written by a newer pytest-graphnetz "
     "(schema version 99*"),
    ('{"schema": "pytest-graphnetz/report", "schema_version": 1, "tasks": []}',
     "*BaselineFormatError: baseline *test_gcn.json cannot be read: *malformed report*"),
])
def test_unreadable_baseline_is_never_overwritten(project: pytest.Pytester, content: str,
                                                  message: str) -> None:
    path = baseline_file(project)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    for args in ((), ("--graphnetz-update-baselines",)):
        result = project.runpytest(*args)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([message])
        assert path.read_text() == content
    # only --graphnetz-force replaces it
    project.runpytest("--graphnetz-update-baselines", "--graphnetz-force").assert_outcomes(passed=1)
    assert load_baseline(path).seeds == tuple(range(6))


def test_ratchet_refuses_a_regressed_refresh(project: pytest.Pytester) -> None:
    project.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    path = baseline_file(project)
    good = path.read_bytes()
    project.makepyfile(test_model=gate([v - 0.05 for v in BASE]))
    refused = project.runpytest("--graphnetz-update-baselines")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*refusing to update baseline*", "*The ratchet refuses*",
                                  "*against the baseline it replaces:*",
                                  "*REFUSED (REGRESSED)*"])
    assert path.read_bytes() == good
    # a better candidate refreshes without force
    project.makepyfile(test_model=gate([v + 0.05 for v in BASE]))
    project.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    assert path.read_bytes() != good


def test_ratchet_refuses_an_inconclusive_loss(project: pytest.Pytester) -> None:
    """An INCONCLUSIVE loss (triangles MAE 3.60 → 4.44, p = 0.063) does not replace the baseline."""
    base = [3.2, 4.1, 3.0, 3.9, 3.3, 4.1]
    loss = [-0.2, -2.5, 0.3, -1.9, 0.4, -1.14]   # + = better; one-sided p = 0.074 (scipy)
    project.makepyfile(test_model=gate(base, metric="mae", task="triangles"))
    project.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    good = baseline_file(project).read_bytes()
    project.makepyfile(test_model=gate([b - d for b, d in zip(base, loss, strict=True)],
                                       metric="mae", task="triangles"))
    refused = project.runpytest("--graphnetz-update-baselines")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines([
        "*refusing to update baseline*", "*INCONCLUSIVE with a negative mean*",
        "*triangles/GCN — mae (lower is better): INCONCLUSIVE*",
        "*paired Δ -0.84 *",
        "*REFUSED (INCONCLUSIVE)*"])
    assert baseline_file(project).read_bytes() == good


# Each step loses 0.005 on every seed (plus a little noise): NOT WORSE than its predecessor at a
# margin of 0.01 (δ = margin + one point = 0.02), and two steps (a full margin) still within δ of
# the first baseline; the third step is 0.015 below it, a significant drop beyond the margin.
JITTER = [[0.0004, -0.0003, 0.0002, -0.0001, 0.0003, -0.0004],
          [-0.0002, 0.0004, -0.0003, 0.0001, -0.0004, 0.0002],
          [0.0003, -0.0001, 0.0004, -0.0002, 0.0001, -0.0003]]


def step(k: int) -> list[float]:
    return [v - 0.005 * k + JITTER[k - 1][i] if k else v for i, v in enumerate(BASE)]


def test_ratchet_stops_drift_against_the_anchor(project: pytest.Pytester) -> None:
    project.makepyfile(test_model=gate(step(0), margin=0.01))
    project.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    for k in (1, 2):
        project.makepyfile(test_model=gate(step(k), margin=0.01))
        ok = project.runpytest("--graphnetz-update-baselines")
        ok.assert_outcomes(passed=1)
        ok.stdout.fnmatch_lines(["*UPDATED (NOT WORSE)*"])
    after_two = baseline_file(project).read_bytes()

    project.makepyfile(test_model=gate(step(3), margin=0.01))
    third = project.runpytest("--graphnetz-update-baselines")
    third.assert_outcomes(failed=1)
    third.stdout.fnmatch_lines([
        "*against the cell's anchor (its first baseline):*",
        "*karate/GCN — accuracy (higher is better): REGRESSED*",
        "*paired Δ -0.01497*",
        "*REFUSED vs anchor*"])
    # against its predecessor alone the step is fine: the anchor is what refused it
    assert "against the baseline it replaces:" not in third.stdout.str()
    assert baseline_file(project).read_bytes() == after_two
    stored = read_baseline(baseline_file(project))
    np.testing.assert_allclose(stored.anchors[("karate", "GCN")].final, step(0))

    # forcing writes it and resets the anchor to the candidate's values
    project.runpytest("--graphnetz-update-baselines", "--graphnetz-force").assert_outcomes(passed=1)
    stored = read_baseline(baseline_file(project))
    np.testing.assert_allclose(stored.anchors[("karate", "GCN")].final, step(3))


def test_the_ratchet_judges_at_the_gates_min_effect(tmp_path) -> None:
    """A loss that is NOT WORSE at the call's δ = 0.05 is written; at the default δ (one point)
    the same loss is INCONCLUSIVE with a negative mean, and refused."""
    base = np.array(BASE)
    loss = np.array([-0.03, 0.01, -0.02, 0.005, -0.025, 0.0])   # mean -0.01, p ≈ 0.1

    def run(values):
        return BenchmarkReport.from_arrays(values.reshape(1, 1, -1), tasks=["karate"],
                                           models=["GCN"], seeds=range(6), metric="accuracy")

    for min_effect, written in ((None, False), (0.05, True)):
        handle = BaselineHandle(tmp_path / f"b{min_effect}.json", update=True)
        refresh(handle, run(base), judge)
        if written:
            verdicts = gates.assert_not_worse(run(base + loss), handle, min_effect=min_effect)
            assert [v.verdict for v in verdicts] == ["NOT WORSE"]
            np.testing.assert_array_equal(load_baseline(handle.path).values("karate", "GCN"),
                                          base + loss)
        else:
            with pytest.raises(AssertionError, match="INCONCLUSIVE with a negative mean"):
                gates.assert_not_worse(run(base + loss), handle, min_effect=min_effect)


# -- unused baselines ------------------------------------------------------------------------------

TWO_GATES = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse


def run(offset):
    X = 0.8 + offset + np.array([[[0.01, 0.03, 0.0, 0.02]]])
    return BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GCN"], seeds=range(4),
                                       metric="accuracy")


def test_{a}(graphnetz_baseline):
    assert_not_worse(run(0.0), graphnetz_baseline())


def test_b(graphnetz_baseline):
    assert_not_worse(run(0.1), graphnetz_baseline())
"""


def test_unused_baselines_are_reported_and_deleted_only_by_a_full_refresh(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntestpaths = .\n")
    pytester.makepyfile(test_model=TWO_GATES.format(a="a"))
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=2)
    folder = pytester.path / "baselines" / "test_model"
    old = folder / "test_a.json"
    assert old.is_file()
    keep = pytester.path / "baselines" / "notes.json"   # not a baseline file: never touched
    keep.write_text('{"not": "ours"}')

    pytester.makepyfile(test_model=TWO_GATES.format(a="renamed"))   # a renamed test
    for partial in (["-k", "renamed"], ["test_model.py"], ["test_model.py::test_renamed"]):
        result = pytester.runpytest("--graphnetz-update-baselines", *partial)
        result.stdout.fnmatch_lines([
            "*graphnetz: 1 baseline(s) that no test of this run used*not deleted, the run was "
            "partial*", f"  {old.relative_to(pytester.path)}"])
        assert old.is_file(), partial
    # -k deselected test_b: its baseline is known, so it is not reported
    assert str(folder / "test_b.json") not in result.stdout.str()

    full = pytester.runpytest("--graphnetz-update-baselines")
    full.assert_outcomes(passed=2)
    full.stdout.fnmatch_lines(["*graphnetz: deleted 1 baseline(s) that no test used*",
                               f"  {old.relative_to(pytester.path)}"])
    assert not old.exists()
    assert {p.name for p in folder.glob("*.json")} == {"test_renamed.json", "test_b.json"}
    assert keep.is_file()
    # without the refresh option nothing is looked for
    assert "baseline(s)" not in pytester.runpytest().stdout.str()


def test_a_failing_full_refresh_deletes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntestpaths = .\n")
    pytester.makepyfile(test_model=TWO_GATES.format(a="a"))
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=2)
    pytester.makepyfile(test_model=TWO_GATES.format(a="renamed") + """

def test_fails_before_asking(graphnetz_baseline):
    raise RuntimeError("training broke")
""")
    result = pytester.runpytest("--graphnetz-update-baselines")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*not deleted, the run was partial (the run did not pass)*"])
    assert (pytester.path / "baselines" / "test_model" / "test_a.json").is_file()
    # a skipped test might use a named baseline this run cannot see: nothing is deleted either
    pytester.makepyfile(test_model=TWO_GATES.format(a="renamed") + """
import pytest


@pytest.mark.skip(reason="no GPU here")
def test_on_gpu(graphnetz_baseline):
    graphnetz_baseline("gpu")
""")
    result = pytester.runpytest("--graphnetz-update-baselines")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*partial (tests that use baselines were skipped: "
                                 "test_model.py::test_on_gpu)*"])
    assert (pytester.path / "baselines" / "test_model" / "test_a.json").is_file()


IDS = """
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_graphnetz import BenchmarkReport, assert_not_worse


@pytest.mark.parametrize("cfg", ["a/b", "a b"])
def test_cfg(cfg, graphnetz_baseline):
    offset = 0.0 if cfg == "a/b" else 0.1
    X = 0.8 + offset + np.array([[[0.01, 0.03, 0.0, 0.02]]])
    report = BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GCN"], seeds=range(4),
                                         metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
"""


def test_parametrize_ids_that_differ_only_in_unsafe_characters_get_their_own_files(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ids=IDS)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")  # the project's first look
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=2)
    folder = pytester.path / "baselines" / "test_ids"
    assert sorted(p.name for p in folder.glob("*.json")) == ["test_cfg[a%20b].json",
                                                             "test_cfg[a%2Fb].json"]
    # each is compared with its own numbers (one shared file made the other REGRESSED)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)
    assert result.stdout.str().count("IDENTICAL") >= 2


def test_two_modules_of_one_name_refuse_to_share_a_baseline(pytester: pytest.Pytester) -> None:
    body = """
def test_x(graphnetz_baseline):
    graphnetz_baseline()
"""
    for folder in ("a", "b"):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "test_cfg.py").write_text(body)
    result = pytester.runpytest("--import-mode=importlib")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*BaselineError: tests a/test_cfg.py::test_x and "
                                 "b/test_cfg.py::test_x would share the baseline file *"
                                 "test_cfg/test_x.json*graphnetz_baseline(\"<unique name>\")*"])
    # names of their own resolve it
    for folder in ("a", "b"):
        (pytester.path / folder / "test_cfg.py").write_text(
            body.replace("graphnetz_baseline()", f'graphnetz_baseline("{folder}_x")'))
    pytester.runpytest("--import-mode=importlib").assert_outcomes(passed=2)


def test_handle_paths_inside_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model="""
        class TestA:
            def test_x(self, graphnetz_baseline):
                print("PATH=" + str(graphnetz_baseline().path))

        def test_x(graphnetz_baseline):
            print("PATH=" + str(graphnetz_baseline().path))
            print("PATH=" + str(graphnetz_baseline("shared").path))
    """)
    result = pytester.runpytest("-s", "--graphnetz-baseline-dir=refs")
    result.assert_outcomes(passed=2)
    refs = pytester.path / "refs" / "test_model"
    assert [line.split("=", 1)[1] for line in result.outlines if "PATH=" in line] == [
        str(refs / "TestA.test_x.json"), str(refs / "test_x.json"), str(refs / "shared.json")]


def _gcn(hidden: int):
    def factory(in_channels: int, out_channels: int):
        from torch_geometric.nn import GCN

        return GCN(in_channels, hidden, 2, out_channels)
    return factory


def test_a_baselines_model_description_changes_with_the_architecture(root, tmp_path) -> None:
    """PyG's compact repr hides the hidden width (``GCN(3, 3, num_layers=2)`` at 32 and at
    96): the description names the model's settings (``hidden_channels=96``) and carries a
    digest of the structure, so a refresh's diff shows what changed."""
    pytest.importorskip("torch_geometric.nn")
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import tiny_task

    report = run_benchmark({"tiny": tiny_task(epochs=1)}, {"narrow": _gcn(32), "wide": _gcn(96),
                                                          "again": _gcn(32)},
                           seeds=[0], device="cpu", root=root)
    cells = json.loads(write_baseline(tmp_path / "b.json", report, {}).read_text())["models"]
    narrow, wide, again = (cells[m]["tasks"]["tiny"]["model"] for m in ("narrow", "wide", "again"))
    assert narrow.split(" {")[0] == wide.split(" {")[0]    # the repr alone cannot tell them apart
    assert narrow != wide and narrow.startswith("GCN(") and "[structure " in narrow
    assert narrow == again                                  # a digest of structure, not values
    # and it names the setting that changed
    assert "hidden_channels=32" in narrow and "hidden_channels=96" in wide
    assert narrow.replace("hidden_channels=32", "").split(" [")[0] == \
        wide.replace("hidden_channels=96", "").split(" [")[0]


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.slow
def test_two_branches_refreshing_different_models_merge_without_conflict(tmp_path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    path = repo / "baselines" / "test_m" / "test_gates.json"
    refresh(BaselineHandle(path, update=True),
            report(models=("GAT", "GCN", "SAGE"), seeds=range(10)), judge)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "baseline")
    for branch, model in (("gcn", "GCN"), ("sage", "SAGE")):
        git(repo, "checkout", "-qb", branch, "main")
        # an improvement the ratchet accepts, different in each branch
        refresh(BaselineHandle(path, update=True),
                report(models=(model,), seeds=range(10), offset=0.05), judge)
        git(repo, "commit", "-qam", f"refresh {model}")
    git(repo, "checkout", "-q", "gcn")
    merge = subprocess.run(["git", "merge", "--no-edit", "sage"], cwd=repo, capture_output=True,
                           text=True)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    merged = load_baseline(path)
    for model in ("GCN", "SAGE"):
        np.testing.assert_array_equal(
            merged.values("karate", model),
            report(models=(model,), seeds=range(10), offset=0.05).values("karate", model))
    np.testing.assert_array_equal(merged.values("karate", "GAT"),
                                  report(models=("GAT",), seeds=range(10)).values("karate", "GAT"))


SHARED = """
import os
import time

import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse


def barrier(name):
    # both tests reach the refresh together, so their read-merge-writes overlap
    open(name, "w").close()
    deadline = time.time() + 30
    while not all(os.path.exists(n) for n in ("ready_a", "ready_b")) and time.time() < deadline:
        time.sleep(0.05)


def refresh(model, name, graphnetz_baseline):
    X = np.array([[[0.8, 0.82, 0.81, 0.83]]])
    report = BenchmarkReport.from_arrays(X, tasks=["karate"], models=[model], seeds=range(4),
                                         metric="accuracy")
    barrier(name)
    assert_not_worse(report, graphnetz_baseline("shared"))


def test_a(graphnetz_baseline):
    refresh("GCN", "ready_a", graphnetz_baseline)


def test_b(graphnetz_baseline):
    refresh("GAT", "ready_b", graphnetz_baseline)
"""


SLOW_WRITES = """
import os
import time

_replace = os.replace


def slow_replace(src, dst, *args, **kwargs):
    # widen the window between reading a baseline and writing it back
    if str(dst).endswith("shared.json"):
        time.sleep(0.5)
    return _replace(src, dst, *args, **kwargs)


os.replace = slow_replace
"""


@pytest.mark.slow
def test_two_xdist_workers_refreshing_one_baseline_both_keep_their_cells(
        pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_shared=SHARED)
    pytester.makeconftest(SLOW_WRITES)
    # an old file no test uses: the workers tell the controller what they used, so this full
    # refresh deletes it and only it
    orphan = write_baseline(pytester.path / "baselines" / "test_shared" / "old_name.json",
                            report(), {})
    result = pytester.runpytest_subprocess("-n", "2", "--graphnetz-update-baselines")
    result.assert_outcomes(passed=2)
    shared = load_baseline(pytester.path / "baselines" / "test_shared" / "shared.json")
    assert sorted(shared.models) == ["GAT", "GCN"]
    result.stdout.fnmatch_lines(["*graphnetz: deleted 1 baseline(s) that no test used*",
                                 f"  {orphan.relative_to(pytester.path)}"])
    assert not orphan.exists()
