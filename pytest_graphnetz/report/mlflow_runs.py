"""Runs a team logged to MLflow, read into a report's axes (``BenchmarkReport.from_mlflow``).

One MLflow run is one (task, model, seed) triple: the task and model are the values of two
named params (absent names: one label each), the seed the value of the pairing param
(``seed``), the value one named metric, either its last value or, with ``best_by``, its per-step
series beside the validation metric's, so that the report's own ``best_val`` rule picks the
epoch (``step`` = epoch). The runs are read a page at a time and only what the report needs is
kept (a few numbers per run), so an experiment of 10,000 runs costs what its values cost.

Refusals name the runs: a run still running (or that never finished), a run without the metric
or the params, a seed that is not a whole number, two runs of one cell with the same seed, a cell
that lacks seeds its neighbours have. Bad input (the package missing, a store that cannot be
reached, an experiment that does not exist, a filter MLflow rejects) raises
:class:`MlflowInputError`, which names the option and the fix.

``mlflow`` is imported inside the functions, only when a report is read from it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pytest_graphnetz.base.text import exception_line, listed
from pytest_graphnetz.report.epochs import History, MetricSpec

# Runs per search request: MLflow's own default page (the REST API's cap is 50,000).
PAGE_SIZE = 1000
# Cells of a report read from runs without a task or model param.
DEFAULT_TASK, DEFAULT_MODEL = "runs", "model"
INSTALL = "pip install 'pytest-graphnetz[mlflow]'"


class MlflowInputError(ValueError):
    """A store, experiment or filter that cannot be read; the message names the option and
    the fix (the command line turns it into one line and exit 2)."""


class MlflowRunsError(ValueError):
    """Runs that cannot make a paired report; the message names the runs."""


@dataclass(frozen=True)
class RunSelection:
    """Which runs make one side: an experiment (name or id) and an optional MLflow filter
    string (``params.version = 'v2'``). Spelled ``EXPERIMENT[:FILTER]`` on the command line."""

    experiment: str
    filter_string: str = ""

    @classmethod
    def parse(cls, text: str) -> RunSelection:
        experiment, _, filter_string = text.partition(":")
        return cls(experiment.strip(), filter_string.strip())

    def __str__(self) -> str:
        return self.experiment + (f":{self.filter_string}" if self.filter_string else "")


@dataclass(frozen=True)
class LoggedRuns:
    """What the runs of one side hold, in the axes of a report (sorted labels)."""

    tasks: tuple[str, ...]
    models: tuple[str, ...]
    seeds: tuple[int, ...]
    metrics: Mapping[str, MetricSpec]
    histories: Mapping[tuple[str, str, int], History]
    run_ids: Mapping[tuple[str, str, int], str]
    epoch_selection: str

    def protocol(self, selection: RunSelection, tracking_uri: str | None) -> dict[str, Any]:
        """The report's record of where its numbers came from (each triple's run id)."""
        return {"source": "mlflow", "mlflow": {
            "tracking_uri": tracking_uri, "experiment": selection.experiment,
            "filter": selection.filter_string,
            "runs": {f"{t}/{m}/{s}": run for (t, m, s), run in self.run_ids.items()}}}


# While we talk to a store: one try per request and a 10 s timeout (MLflow's defaults retry
# for minutes), unless the user set them.
FAIL_FAST = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


@contextmanager
def failing_fast() -> Iterator[None]:
    """:data:`FAIL_FAST` in the environment for the block; the caller's restored after it."""
    saved = {k: os.environ.get(k) for k in FAIL_FAST}
    for key, value in FAIL_FAST.items():
        os.environ.setdefault(key, value)
    try:
        yield
    finally:
        for key, before in saved.items():
            if before is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = before


def mlflow_client(tracking_uri: str | None, option: str = "--tracking-uri") -> Any:
    """An ``MlflowClient`` for ``tracking_uri`` (None: ``MLFLOW_TRACKING_URI``, else MLflow's
    default ``./mlruns``). A missing package is an ImportError naming the extra."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ImportError(f"reading or writing MLflow runs needs the mlflow package: "
                          f"{INSTALL}") from None
    try:
        return MlflowClient(tracking_uri=tracking_uri)
    except Exception as exc:   # a malformed URI, an unknown scheme
        raise MlflowInputError(f"{option} {tracking_uri!r}: {exception_line(exc, 700)}; give a "
                               "tracking URI MLflow accepts (http://host:port, sqlite:///"
                               "file.db, file:///dir or a folder)") from None


def experiment_id(client: Any, experiment: str) -> str:
    """The id of the experiment named (or numbered) ``experiment``; an unknown one, or a store
    that cannot be reached, is an :class:`MlflowInputError`."""
    from mlflow.exceptions import MlflowException

    uri = client.tracking_uri
    try:
        found = client.get_experiment_by_name(experiment)
        if found is None and experiment.isdigit():
            found = client.get_experiment(experiment)
    except MlflowException as exc:
        if "RESOURCE_DOES_NOT_EXIST" not in str(exc.error_code):
            raise _unreachable(uri, exc) from None
        found = None
    except Exception as exc:   # requests' ConnectionError, an unreadable store
        raise _unreachable(uri, exc) from None
    if found is None:
        raise MlflowInputError(f"no experiment named or numbered {experiment!r} at "
                               f"{uri}; give an experiment name or id that store holds (see "
                               "`mlflow experiments search`) or --tracking-uri")
    return str(found.experiment_id)


def _unreachable(uri: str, exc: BaseException) -> MlflowInputError:
    return MlflowInputError(f"--tracking-uri {uri}: the tracking store cannot be read "
                            f"({exception_line(exc, 700)}); start the server, or give "
                            "--tracking-uri (or MLFLOW_TRACKING_URI) of a store that is up")


def search_runs(client: Any, experiment: str, filter_string: str, *,
                page_size: int = PAGE_SIZE) -> Iterator[Any]:
    """Every active run of ``experiment`` that matches ``filter_string``, a page at a time."""
    from mlflow.exceptions import MlflowException

    token = None
    while True:
        try:
            page = client.search_runs([experiment], filter_string=filter_string,
                                      max_results=page_size, page_token=token)
        except MlflowException as exc:
            if "INVALID_PARAMETER_VALUE" in str(exc.error_code) or "filter" in str(exc).lower():
                raise MlflowInputError(
                    f"MLflow rejects the filter {filter_string!r}: "
                    f"{exception_line(exc, 700)}; write it as MLflow's search syntax, e.g. "
                    "\"params.version = 'v2' and metrics.val_acc > 0\"") from None
            raise _unreachable(client.tracking_uri, exc) from None
        except Exception as exc:
            raise _unreachable(client.tracking_uri, exc) from None
        yield from page
        token = page.token
        if not token:
            return


def read_runs(client: Any, selection: RunSelection, *, metric: str,
              best_by: str | None = None, pair_by: str = "seed", task_param: str | None = None,
              model_param: str | None = None, higher_is_better: bool | None = None,
              page_size: int = PAGE_SIZE) -> LoggedRuns:
    """The runs of ``selection`` as a report's axes: one value per run from ``metric`` (its
    last value; with ``best_by``, its per-step series beside ``best_by``'s, selected by the
    report's ``best_val`` rule), paired by the integer param ``pair_by``, cells from the params
    ``task_param`` and ``model_param``. Raises :class:`MlflowRunsError` naming the runs that
    cannot make a paired report."""
    spec = MetricSpec.from_name(metric, higher_is_better)
    if best_by is not None:
        MetricSpec.from_name(best_by)   # its direction picks the epoch: refuse an unknown one
    exp = experiment_id(client, selection.experiment)
    histories: dict[tuple[str, str, int], History] = {}
    run_ids: dict[tuple[str, str, int], str] = {}
    problems: dict[str, list[str]] = {}
    for run in search_runs(client, exp, selection.filter_string, page_size=page_size):
        info, data = run.info, run.data
        name = f"{info.run_id} ({info.run_name})" if info.run_name else info.run_id
        if info.status in ("RUNNING", "SCHEDULED"):
            problems.setdefault("still running (wait until they finish)", []).append(name)
            continue
        if info.status != "FINISHED":
            problems.setdefault(f"ended {info.status} (rerun them, or filter them out with "
                                "\"attributes.status = 'FINISHED'\")", []).append(name)
            continue
        labels = []
        for param, default in ((task_param, DEFAULT_TASK), (model_param, DEFAULT_MODEL)):
            value = default if param is None else data.params.get(param)
            if value is None:
                problems.setdefault(f"lack the param `{param}`", []).append(name)
            labels.append(value)
        seed_text = data.params.get(pair_by)
        try:
            seed = int(str(seed_text))
        except ValueError:
            problems.setdefault(f"have no whole-number param `{pair_by}` to pair by (got "
                                f"{seed_text!r})", []).append(name)
            continue
        if metric not in data.metrics:
            problems.setdefault(f"did not log the metric `{metric}`", []).append(name)
            continue
        if None in labels:
            continue
        key = (str(labels[0]), str(labels[1]), seed)
        if key in run_ids:
            problems.setdefault(f"repeat the {pair_by} of another run of their cell "
                                "(one run per seed and cell; filter the others out)",
                                []).append(f"{name} and {run_ids[key]} ({key[0]}/{key[1]}, "
                                           f"{pair_by} {seed})")
            continue
        run_ids[key] = name
        if best_by is None:
            histories[key] = History(test=(float(data.metrics[metric]),))
        else:
            history = _series(client, info.run_id, metric, best_by)
            if isinstance(history, str):
                problems.setdefault(history, []).append(name)
                continue
            histories[key] = history
    if not run_ids and not problems:
        raise MlflowRunsError(f"experiment {selection}: no runs match; check the experiment and "
                              "the filter")
    problems.update(_missing_seeds(run_ids, pair_by))
    if problems:
        raise MlflowRunsError(f"experiment {selection}: " + "; ".join(
            f"{len(runs)} run(s) {why}: {listed(runs, 5)}" for why, runs in problems.items()))
    tasks = tuple(sorted({k[0] for k in run_ids}))
    return LoggedRuns(tasks=tasks, models=tuple(sorted({k[1] for k in run_ids})),
                      seeds=tuple(sorted({k[2] for k in run_ids})),
                      metrics={t: spec for t in tasks}, histories=histories, run_ids=run_ids,
                      epoch_selection="final" if best_by is None else "best_val")


def _series(client: Any, run_id: str, metric: str, best_by: str) -> History | str:
    """The run's per-step ``metric`` and ``best_by`` series (step = epoch), or why not."""
    series = []
    for key in (metric, best_by):
        by_step: dict[int, Any] = {}
        for point in client.get_metric_history(run_id, key):
            # a step logged twice: its latest value, as MLflow's own "latest" reads it
            if point.step not in by_step or point.timestamp >= by_step[point.step].timestamp:
                by_step[point.step] = point
        series.append(by_step)
    if not series[1]:
        return f"did not log the validation metric `{best_by}`"
    if series[0].keys() != series[1].keys():
        return f"logged `{metric}` and `{best_by}` at different steps (log both at each epoch)"
    steps = sorted(series[0])
    return History(test=tuple(float(series[0][s].value) for s in steps),
                   val=tuple(float(series[1][s].value) for s in steps), val_metric=best_by)


def _missing_seeds(run_ids: Mapping[tuple[str, str, int], str], pair_by: str
                   ) -> dict[str, list[str]]:
    """Cells that lack seeds another cell of the side has: every cell must hold every seed."""
    seeds = sorted({k[2] for k in run_ids})
    cells = sorted({k[:2] for k in run_ids})
    lacking = []
    for t, m in cells:
        absent = [str(s) for s in seeds if (t, m, s) not in run_ids]
        if absent:
            lacking.append(f"{t}/{m} lacks {pair_by} {listed(absent, 5)}")
    if not lacking:
        return {}
    return {"are missing where other cells have them (log them, or filter the extra ones out)":
            lacking}


def unpaired_runs(baseline: Mapping[str, Any], candidate: Mapping[str, Any], pair_by: str
                  ) -> list[str]:
    """The runs of either side whose cell and seed the other side lacks, named. Each side is a
    report's ``protocol["mlflow"]["runs"]`` (``task/model/seed`` → run)."""
    out = []
    for side, mine, other in (("baseline", baseline, candidate),
                              ("candidate", candidate, baseline)):
        cells = {key.rsplit("/", 1)[0] for key in other}
        alone = [str(run) for key, run in mine.items()
                 if key.rsplit("/", 1)[0] in cells and key not in other]
        if alone:
            out.append(f"{len(alone)} {side} run(s) have no partner with the same {pair_by} on "
                       f"the other side: {listed(alone, 5)}")
    return out
