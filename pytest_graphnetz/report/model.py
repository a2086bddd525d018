"""``BenchmarkReport``: a benchmark's record (:class:`~.record.ReportRecord`) with its public
methods: the statistics, the JSON forms, the tables and the figure, each a call into the module
that takes a record (``views``, ``codec``, ``values_form``, ``export``, ``plots``).

The axis convention and what a record holds: :mod:`.record`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from pytest_graphnetz.report import values_form, views
from pytest_graphnetz.report.codec import dumps, read_json, report_arguments, report_to_dict
from pytest_graphnetz.report.files import write_text_atomic
from pytest_graphnetz.report.record import EpochSelectionError, ReportRecord
from pytest_graphnetz.report.schema import (
    VALUES_SCHEMA,
    ReportFormatError,
    check_report_dict,
    check_schema,
)

if TYPE_CHECKING:
    from pytest_graphnetz.stats import Pairwise, Summary
    from pytest_graphnetz.stats.heldout import ExamplePairwise

__all__ = ["BenchmarkReport", "EpochSelectionError", "load_report"]


class BenchmarkReport(ReportRecord):
    """Per-seed results ``X[task, model, seed]`` plus the histories they were selected from.

    Build one with :func:`pytest_graphnetz.run_benchmark`, :meth:`from_arrays` (numbers you
    already have) or :meth:`from_json`.
    """

    def subset(
        self,
        *,
        tasks: Iterable[str] | None = None,
        models: Iterable[str] | None = None,
        seeds: Iterable[int] | None = None,
    ) -> BenchmarkReport:
        """The report restricted to some labels (in the order given): a plain report, also of a
        subclass that carries more (a replicated baseline)."""
        return BenchmarkReport(**self.subset_arguments(tasks=tasks, models=models, seeds=seeds))

    def summary(self, method: str | None = None, *, source: str = "seeds",
                confidence_level: float | None = None, epoch_selection: str | None = None,
                strict: bool = True, rng: Any = None) -> Summary:
        """Per (task, model): n_seeds, mean, std, sem, ci_low, ci_high (prints as a table);
        see :func:`pytest_graphnetz.report.views.summary`."""
        return views.summary(self, method, source=source, confidence_level=confidence_level,
                             epoch_selection=epoch_selection, strict=strict, rng=rng)

    # DESIGN.md's public call pairwise(test="mcnemar") stays; each literal has one return type.
    @overload  # the literals are also str: mypy's documented overlap, resolved first-match
    def pairwise(  # type: ignore[overload-overlap]
            self, test: Literal["mcnemar", "bootstrap-examples"], *,
                 confidence_level: float | None = None, epoch_selection: str | None = None,
                 strict: bool = True, rng: Any = None, untestable: str = "raise",
                 ) -> ExamplePairwise: ...

    @overload
    def pairwise(self, test: str = "paired-t", *, confidence_level: float | None = None,
                 epoch_selection: str | None = None, strict: bool = True, rng: Any = None,
                 untestable: str = "raise") -> Pairwise: ...

    def pairwise(self, test: str = "paired-t", *, confidence_level: float | None = None,
                 epoch_selection: str | None = None, strict: bool = True, rng: Any = None,
                 untestable: str = "raise") -> Pairwise | ExamplePairwise:
        """Per task, every model pair on seeds paired by seed value (``test``: ``"paired-t"``,
        ``"wilcoxon"``, ``"permutation"``, ``"bootstrap"``; see
        :func:`pytest_graphnetz.report.views.pairwise`), or on the same test examples
        (``"mcnemar"``, ``"bootstrap-examples"``: :meth:`pairwise_examples`)."""
        from pytest_graphnetz.stats.heldout import EXAMPLE_TESTS

        if test in EXAMPLE_TESTS:
            return self.pairwise_examples(test, confidence_level=confidence_level,
                                          epoch_selection=epoch_selection, strict=strict,
                                          rng=rng)
        return views.pairwise(self, test, confidence_level=confidence_level,
                              epoch_selection=epoch_selection, strict=strict, rng=rng,
                              untestable=untestable)

    def pairwise_examples(self, test: str = "mcnemar", *, confidence_level: float | None = None,
                          epoch_selection: str | None = None, strict: bool = True,
                          rng: Any = None) -> ExamplePairwise:
        """Per task, every model pair on the same test examples (``test``: ``"mcnemar"``,
        ``"bootstrap-examples"``); see :func:`pytest_graphnetz.report.views.pairwise_examples`."""
        return views.pairwise_examples(self, test, confidence_level=confidence_level,
                                       epoch_selection=epoch_selection, strict=strict, rng=rng)

    def to_latex(self, **kwargs: Any) -> str:
        from pytest_graphnetz.report.export import to_latex

        return to_latex(self, **kwargs)

    def to_markdown(self, **kwargs: Any) -> str:
        from pytest_graphnetz.report.export import to_markdown

        return to_markdown(self, **kwargs)

    def plot_forest(self, path: str | os.PathLike | None = None, ax: Any = None, **kwargs: Any):
        from pytest_graphnetz.report.plots import plot_forest

        return plot_forest(self, path=path, ax=ax, **kwargs)

    @classmethod
    def from_mlflow(cls, experiment: str, *, metric: str, filter_string: str = "",
                    tracking_uri: str | None = None, best_by: str | None = None,
                    pair_by: str = "seed", task_param: str | None = None,
                    model_param: str | None = None, higher_is_better: bool | None = None
                    ) -> BenchmarkReport:
        """A report from runs a team logged to MLflow with its own training code: one run per
        (task, model, seed), the experiment's runs matching ``filter_string``; the value is
        ``metric``'s last, or (``best_by``: a validation metric) the epoch the ``best_val`` rule
        picks on the two per-step series; seeds are the integer param ``pair_by``, cells the
        params ``task_param`` and ``model_param`` (None: one label). ``tracking_uri`` None:
        ``MLFLOW_TRACKING_URI``. See :mod:`pytest_graphnetz.report.mlflow_runs` for the
        refusals; docs/mlflow.md for a worked example."""
        from pytest_graphnetz.report.mlflow_runs import (
            RunSelection,
            failing_fast,
            mlflow_client,
            read_runs,
        )

        selection = RunSelection(experiment, filter_string)
        with failing_fast():
            client = mlflow_client(tracking_uri)
            runs = read_runs(client, selection, metric=metric, best_by=best_by,
                             pair_by=pair_by, task_param=task_param, model_param=model_param,
                             higher_is_better=higher_is_better)
        return cls(tasks=runs.tasks, models=runs.models, seeds=runs.seeds,
                   metrics=runs.metrics, histories=runs.histories,
                   protocol=runs.protocol(selection, client.tracking_uri),
                   settings={"epoch_selection": runs.epoch_selection})

    # -- JSON ----------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """The JSON-ready form: labels, metrics, protocol, fingerprints and every history."""
        return report_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping, *, source: str = "<dict>") -> BenchmarkReport:
        """Inverse of :meth:`to_dict` (and of :meth:`to_values_dict`); a problem raises
        :class:`ReportFormatError` naming ``source``."""
        if check_schema(data, source) == VALUES_SCHEMA:
            return values_form.from_values_dict(cls, data, source)
        check_report_dict(data, source)
        try:
            return cls(**report_arguments(data))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ReportFormatError(f"{source}: malformed report: {detail}") from exc

    def to_values_dict(self) -> dict:
        """The values-only JSON form that committed baselines use (no per-epoch histories);
        see :func:`pytest_graphnetz.report.values_form.to_values_dict`."""
        return values_form.to_values_dict(self, views.summary(self))

    def to_json(self, path: str | os.PathLike) -> Path:
        """Write the report as JSON (atomically: a temp file renamed over ``path``)."""
        path = Path(path)
        write_text_atomic(path, dumps(self.to_dict()))
        return path

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> BenchmarkReport:
        """Load a report written by :meth:`to_json`; errors name the file and the problem."""
        path = Path(path)
        return cls.from_dict(read_json(path), source=str(path))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BenchmarkReport):
            return NotImplemented
        # Compare the canonical JSON text: a dict comparison would call a report with a NaN
        # (diverged seed) unequal to its own round trip, and a tuple unequal to its list form.
        return dumps(self.to_dict()) == dumps(other.to_dict())



def load_report(report_path: str | os.PathLike, ci_method: str | None = None) -> BenchmarkReport:
    """A report read from JSON, with ``ci_method`` overriding the stored one when given."""
    report = BenchmarkReport.from_json(report_path)
    if ci_method is not None:
        report.ci_method = ci_method
    return report
