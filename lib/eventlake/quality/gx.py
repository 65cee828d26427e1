"""Great Expectations as the checks use it: the context, a validator per run, and reading
GX's results back (by suite index, with labels and exception messages).

Its import of great_expectations is prepared by the package's ``__init__``, which Python
runs first: GX's import-time loggers quietened, the modules GX imports but the checks never
use deferred.

Example:
    >>> validator = Validator.create(settings, run_id="3f2a", run_time=datetime.now(UTC))
    >>> validator.build_docs()  # None until a suite ran"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import great_expectations as gx
from great_expectations.core.batch_definition import BatchDefinition
from great_expectations.core.expectation_validation_result import (
    ExpectationSuiteValidationResult,
    ExpectationValidationResult,
)
from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context.data_context.ephemeral_data_context import (
    EphemeralDataContext,
)
from great_expectations.data_context.types.base import (
    DataContextConfig,
    FilesystemStoreBackendDefaults,
    ProgressBarsConfig,
)
from great_expectations.data_context.types.resource_identifiers import (
    ExpectationSuiteIdentifier,
    ValidationResultIdentifier,
)
from great_expectations.expectations.expectation import Expectation
from great_expectations.validator.validation_statistics import calc_validation_statistics
from pyspark.sql import DataFrame

from eventlake.quality.model import SUITE_INDEX, CheckCounts
from eventlake.quality.request import QualityError
from eventlake.warehouse.names import EVENTS

DQ_DOCS: Final = "dq_docs"


#: GX's stores (suites, validation results) under the warehouse: Data Docs are built from them.
GX_STORES: Final = "_dq_gx"


DOCS_SITE: Final = "eventlake"


#: Counts only, which GX computes for all expectations together; listing the unexpected
#: values costs a Spark job per expectation, and the values of a failed check are sampled
#: by eventlake for that check alone.
RESULT_FORMAT: Final = {"result_format": "BASIC", "partial_unexpected_count": 0}


#: GX's metric that counts a column's nulls (a map expectation's "missing" rows).
NULLS_METRIC: Final = "column_values.nonnull.unexpected_count"


#: GX's metric of a column's largest value (the rejects rate's expectation).
MAX_METRIC: Final = "column.max"


def gx_context(stores: Path, docs: Path) -> EphemeralDataContext:
    """A GX context whose stores live in the local folder ``stores`` and its Data Docs
    site in ``docs`` (the warehouse's ``_dq_gx`` and ``dq_docs``, or local copies of them:
    :func:`eventlake.storage.store.working_copy`, since GX 1.x writes local files only).

    Ephemeral (no great_expectations.yml to keep in sync), but with filesystem stores:
    validation results accumulate under ``<warehouse>/_dq_gx``, so the Data Docs index at
    ``<warehouse>/dq_docs`` lists every run, not only the last.
    """
    config = DataContextConfig(
        store_backend_defaults=FilesystemStoreBackendDefaults(root_directory=str(stores)),
        data_docs_sites={
            DOCS_SITE: {
                "class_name": "SiteBuilder",
                "show_how_to_buttons": False,
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    "base_directory": str(docs),
                },
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            }
        },
        analytics_enabled=False,
        # Progress bars would go to the job's log, one line per metric batch.
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


@dataclass
class Validator:
    """GX objects shared by the topics of one run."""

    context: EphemeralDataContext
    events_batch: BatchDefinition[Any]
    stats_batch: BatchDefinition[Any]
    run_identifier: RunIdentifier
    # Validation results and their suites, mixed in one list as GX's UpdateDataDocsAction
    # passes them (build_data_docs' annotation admits only one kind at a time).
    result_ids: list[Any] = field(default_factory=list)

    #: Where the Data Docs site is built (a local folder) and where users find it.
    docs_folder: Path | None = None
    docs_location: str | None = None

    @classmethod
    def create(
        cls, run_id: str, run_time: datetime, *, stores: Path, docs: Path, docs_location: str
    ) -> Validator:
        """``stores``, ``docs``: the local folders of GX's stores and Data Docs;
        ``docs_location``: where the docs' folder is in the warehouse (the index's URL)."""
        context = gx_context(stores, docs)
        # persist=False: the slice is cached by run_checks, once, and released at the end;
        # GX's own persist is never undone.
        source = context.data_sources.add_or_update_spark("eventlake", persist=False)
        events = source.add_dataframe_asset(EVENTS).add_batch_definition_whole_dataframe("slice")
        stats = source.add_dataframe_asset("slice_counts").add_batch_definition_whole_dataframe(
            "slice"
        )
        return cls(
            context,
            events,
            stats,
            RunIdentifier(run_name=run_id, run_time=run_time),
            docs_folder=docs,
            docs_location=docs_location,
        )

    def validate(
        self,
        suite_name: str,
        batch: BatchDefinition[Any],
        expectations: list[Expectation],
        frame: DataFrame,
        parameters: dict[str, Any],
    ) -> ExpectationSuiteValidationResult:
        """Run a suite on a DataFrame, GX scanning it itself; the result is stored for
        Data Docs. A run's suites are judged from counts (:meth:`record`); this is what the
        tests hold those judgements equal to."""
        definition = self._define(suite_name, batch, expectations)
        result = definition.run(
            batch_parameters={"dataframe": frame},
            expectation_parameters=parameters,
            result_format=dict(RESULT_FORMAT),
            run_id=self.run_identifier,
        )
        self._keep_for_docs(suite_name, result.batch_id)
        return result

    def record(
        self,
        suite_name: str,
        batch: BatchDefinition[Any],
        expectations: Sequence[Expectation],
        counts: Sequence[CheckCounts],
        parameters: dict[str, Any],
    ) -> ExpectationSuiteValidationResult:
        """A suite judged by GX from counts computed beforehand (``counts[i]`` are those of
        ``expectations[i]``; :func:`eventlake.quality.measure.measure_slice`), instead of
        GX scanning the data: each expectation's own ``metrics_validate`` decides its
        success and result. The suite and its result are stored for Data Docs, as
        :meth:`validate` stores them.

        Example:
            >>> validator.record("events.orders", validator.events_batch, [expectation],
            ...                  [CheckCounts(rows=10, nulls=0, unexpected=0)], {}).success
            True
        """
        definition = self._define(suite_name, batch, expectations)
        asset = batch.data_asset
        batch_id = f"{asset.datasource.name}-{asset.name}"
        results = [
            judge(e, c, parameters, batch_id) for e, c in zip(expectations, counts, strict=True)
        ]
        statistics = calc_validation_statistics(results)
        outcome = ExpectationSuiteValidationResult(
            results=results,
            success=statistics.success,
            suite_name=suite_name,
            statistics={
                "evaluated_expectations": statistics.evaluated_expectations,
                "successful_expectations": statistics.successful_expectations,
                "unsuccessful_expectations": statistics.unsuccessful_expectations,
                "success_percent": statistics.success_percent,
            },
            suite_parameters=parameters,
            meta={
                "great_expectations_version": gx.__version__,
                "batch_spec": {"batch_data": "SparkDataFrame"},
                "active_batch_definition": {
                    "datasource_name": asset.datasource.name,
                    "data_connector_name": "fluent",
                    "data_asset_name": asset.name,
                    "batch_identifiers": {"dataframe": "<DATAFRAME>"},
                },
                "validation_id": definition.id,
                "checkpoint_id": None,
                "run_id": self.run_identifier,
                "validation_time": self.run_identifier.run_time,
                "batch_parameters": {"dataframe": "<DATAFRAME>"},
            },
            batch_id=batch_id,
        )
        self.context.validation_results_store.store_validation_results(
            suite_validation_result=outcome,
            suite_validation_result_identifier=self._keep_for_docs(suite_name, batch_id),
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=suite_name),
        )
        return outcome

    def _define(
        self, suite_name: str, batch: BatchDefinition[Any], expectations: Sequence[Expectation]
    ) -> gx.ValidationDefinition:
        # The suite and its validation definition, stored in GX's stores (Data Docs).
        suite = self.context.suites.add_or_update(
            gx.ExpectationSuite(name=suite_name, expectations=list(expectations))
        )
        return self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=suite_name, data=batch, suite=suite)
        )

    def _keep_for_docs(self, suite_name: str, batch_id: str | None) -> ValidationResultIdentifier:
        suite_id = ExpectationSuiteIdentifier(name=suite_name)
        result_id = ValidationResultIdentifier(
            expectation_suite_identifier=suite_id,
            run_id=self.run_identifier,
            batch_identifier=batch_id,
        )
        self.result_ids += [result_id, suite_id]
        return result_id

    def build_docs(self) -> str | None:
        """Render this run's results and the index page; the index's URL."""
        if not self.result_ids:
            return None
        urls = self.context.build_data_docs(
            site_names=[DOCS_SITE], resource_identifiers=self.result_ids
        )
        url = str(urls.get(DOCS_SITE) or "")
        if not url:
            return None
        if self.docs_folder is not None and self.docs_location is not None:
            # A local copy's URL names a temporary folder: name the warehouse's instead.
            local = self.docs_folder.as_uri()
            if url.startswith(local) and not self.docs_location.startswith(local):
                return self.docs_location.rstrip("/") + url[len(local) :]
        return url


def judge(
    expectation: Expectation, counts: CheckCounts, parameters: dict[str, Any], batch_id: str
) -> ExpectationValidationResult:
    """GX's verdict on ``expectation`` given ``counts``: the expectation names the metrics
    it needs (``get_validation_dependencies``), they are filled from the counts, and its
    ``metrics_validate`` judges them, as GX does after computing them itself. Suite
    parameters are substituted as in a GX run. A metric the counts cannot give is a
    :class:`QualityError` naming it (a GX upgrade that asks for more).

    Example:
        >>> not_null = ExpectColumnValuesToNotBeNull(column="id")
        >>> judge(not_null, CheckCounts(rows=10, nulls=2, unexpected=2), {}, "b").success
        False
    """
    configuration = copy.deepcopy(expectation.configuration)
    configuration.process_suite_parameters(
        suite_parameters=parameters, interactive_evaluation=True, data_context=None
    )
    configuration.kwargs["batch_id"] = batch_id
    judged = configuration.to_domain_obj()
    runtime = {"result_format": dict(RESULT_FORMAT)}
    dependencies = judged.get_validation_dependencies(runtime_configuration=dict(runtime))
    metrics: dict[Any, Any] = {}
    for name, metric in dependencies.metric_configurations.items():
        metrics[metric.id] = _metric_value(name, counts, configuration.type)
    return judged.metrics_validate(metrics=metrics, runtime_configuration=runtime)


def _metric_value(name: str, counts: CheckCounts, expectation_type: str) -> Any:
    if name == "table.row_count":
        return counts.rows
    if name == NULLS_METRIC and counts.nulls is not None:
        return counts.nulls
    if name.endswith(".unexpected_count") and counts.unexpected is not None:
        return counts.unexpected
    if name == MAX_METRIC and counts.maximum is not None:
        return counts.maximum
    if name.endswith(".unexpected_values") and counts.unexpected is not None:
        return []  # BASIC results with partial_unexpected_count 0 list none
    raise QualityError(
        f"Great Expectations {gx.__version__} asks for the metric {name} to judge "
        f"{expectation_type}, which eventlake's one-pass counts do not give "
        "(eventlake.quality.measure): check this GX version before using it."
    )


def results_by_plan_index(
    outcome: ExpectationSuiteValidationResult,
) -> dict[int, ExpectationValidationResult]:
    """GX orders results its own way: key them by the suite index kept in their meta."""
    results = {}
    for result in outcome.results:
        configuration = result.expectation_config
        if configuration is None or configuration.meta is None:
            raise QualityError("GX returned a result without its expectation")
        results[int(configuration.meta[SUITE_INDEX])] = result
    return results


def exception_message(info: Any) -> str | None:
    """GX nests exception details per metric; the first message found."""
    if isinstance(info, Mapping):
        if info.get("raised_exception") and info.get("exception_message"):
            return str(info["exception_message"])
        for value in info.values():
            found = exception_message(value)
            if found:
                return found
    return None


def expectation_label(configuration: Any) -> str:
    """An expectation as ``type(column)``, e.g. ``expect_column_values_to_not_be_null(id)``."""
    kwargs = configuration.kwargs
    target = kwargs.get("column") or ",".join(kwargs.get("column_list") or [])
    return f"{configuration.type}({target})"
