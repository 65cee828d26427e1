"""Data-quality checks of the events table with Great Expectations, executed by Spark.

One run (:func:`run_checks`):

1. **Slice.** By default only the rows added since the last check: the Delta versions
   after the one recorded in ``dq_results`` (see :func:`read_slice`); ``--full`` takes
   the whole table at its current version. ``rejects`` is sliced the same way.
2. **Derive** the columns some rules need, as Spark expressions: how often each
   (source, id) occurs in the whole table, the invalid extension names, the
   partitionkey extension. The slice is cached once for all expectations.
3. **Validate** per topic: an expectation suite built from the topic's rules
   (:mod:`eventlake.quality_config`) runs on the slice through GX's Spark data source;
   the rejects rate runs on a one-row frame of the slice's counts.
4. **Sample**: for a failed check its condition runs again in Spark and the first 10
   Kafka coordinates of offending rows are kept, so a person can find the records.
5. **Publish**: GX Data Docs are rebuilt under ``<warehouse>/dq_docs`` and one row per
   expectation is appended to ``<warehouse>/dq_results``, which also records the versions
   checked (the next run starts after them).

Only result rows, per-topic counts and samples reach the driver; the table never does.

Example:
    >>> report = run_checks(spark, settings, CheckRequest(topic="orders"))
    >>> print(report.render())
    >>> report.exit_code  # 1 when a check of severity "error" failed
    0
"""

# Imports follow the logger set-up below, which must run before great_expectations loads.
# ruff: noqa: E402

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

#: Loggers that print hundreds of INFO lines ("Skipping registering function ...") while
#: great_expectations is imported, once logging is configured (Airflow configures it).
NOISY_GX_LOGGERS: Final = (
    "great_expectations._docs_decorators",
    "great_expectations.expectations.registry",
)


def _quiet_gx_import_logs() -> None:
    for name in NOISY_GX_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:  # a level set on purpose stays
            logger.setLevel(logging.WARNING)


# Must run before the first import of great_expectations: the lines are logged at import.
_quiet_gx_import_logs()

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
from great_expectations.expectations.core.expect_column_max_to_be_between import (
    ExpectColumnMaxToBeBetween,
)
from great_expectations.expectations.core.expect_column_value_lengths_to_be_between import (
    ExpectColumnValueLengthsToBeBetween,
)
from great_expectations.expectations.core.expect_column_values_to_be_between import (
    ExpectColumnValuesToBeBetween,
)
from great_expectations.expectations.core.expect_column_values_to_be_in_set import (
    ExpectColumnValuesToBeInSet,
)
from great_expectations.expectations.core.expect_column_values_to_be_null import (
    ExpectColumnValuesToBeNull,
)
from great_expectations.expectations.core.expect_column_values_to_match_regex import (
    ExpectColumnValuesToMatchRegex,
)
from great_expectations.expectations.core.expect_column_values_to_not_be_null import (
    ExpectColumnValuesToNotBeNull,
)
from great_expectations.expectations.core.expect_table_row_count_to_be_between import (
    ExpectTableRowCountToBeBetween,
)
from great_expectations.expectations.expectation import Expectation
from great_expectations.expectations.row_conditions import Column as GxColumn
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from eventlake.binding import REQUIRED_ATTRIBUTES, SPEC_VERSION
from eventlake.quality_config import (
    CheckName,
    QualityConfig,
    QualityConfigError,
    Severity,
    TopicRules,
    load_quality_config,
)
from eventlake.settings import Settings
from eventlake.tables import DQ_RESULTS, DQ_RESULTS_SCHEMA, EVENTS, REJECTS, rejected_by_ingest
from eventlake.text_table import text_table

DQ_DOCS: Final = "dq_docs"
#: GX's stores (suites, validation results) under the warehouse: Data Docs are built from them.
GX_STORES: Final = "_dq_gx"
DOCS_SITE: Final = "eventlake"
SAMPLE_SIZE: Final = 10
CHECKABLE_TABLES: Final = (EVENTS,)
COORDINATES: Final = ("kafka_topic", "kafka_partition", "kafka_offset")

# The patterns run in Java (rlike): they end in \z, not $, which would also match before
# a trailing line break ("/shop\n"); the binding matches whole values for the same reason.

#: RFC 3986 URI-reference: a URI with a scheme, or a relative reference whose first
#: segment has no colon; only allowed characters and well-formed percent-escapes.
URI_REFERENCE_PATTERN: Final = (
    r"^(?:[A-Za-z][A-Za-z0-9+.\-]*:|(?![^/?#]*:))"
    r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]]|%[0-9A-Fa-f]{2})*\z"
)
#: RFC 3986 section 4.3 absolute-URI: scheme, no fragment.
ABSOLUTE_URI_PATTERN: Final = (
    r"^[A-Za-z][A-Za-z0-9+.\-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]|%[0-9A-Fa-f]{2})+\z"
)
_MEDIA_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+\-]{0,126}"
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z\-]+"
#: RFC 2046 / 6838 media type: type/subtype, then parameters (token or quoted-string values).
MEDIA_TYPE_PATTERN: Final = (
    rf"^{_MEDIA_NAME}/{_MEDIA_NAME}"
    rf"(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|\"(?:[^\"\\]|\\.)*\"))*[ \t]*\z"
)

#: Derived columns the expectations look at besides the table's own.
OCCURRENCES: Final = "source_id_occurrences"
INVALID_EXTENSION_NAMES: Final = "invalid_extension_names"
PARTITIONKEY: Final = "partitionkey"
#: Meta key of an expectation's position in the plan (GX reorders results).
PLAN_INDEX: Final = "eventlake_plan_index"
#: Suite parameter of time_not_future; its value is the check's start plus the skew.
LATEST_TIME_PARAMETER: Final = "latest_allowed_time"

_STATS_SCHEMA: Final = StructType(
    [
        StructField("kafka_topic", StringType()),
        StructField("events", LongType()),
        StructField("rejects", LongType()),
        StructField("rejects_rate", DoubleType()),
    ]
)

Coordinate = tuple[str, int, int]


class QualityError(RuntimeError):
    """A check run cannot start; the message says what to change."""


@dataclass(frozen=True)
class CheckRequest:
    """What to check; mirrors the ``eventlake check`` options.

    Example:
        >>> CheckRequest(full=True, topic="orders").table
        'events'
    """

    table: str = EVENTS
    full: bool = False
    topic: str | None = None

    def __post_init__(self) -> None:
        if self.table not in CHECKABLE_TABLES:
            raise QualityError(
                f"Cannot check table {self.table!r}: checks exist for "
                f"{', '.join(CHECKABLE_TABLES)}."
            )
        if self.topic is not None and not self.topic.strip():
            raise QualityError("--topic must name a topic.")


@dataclass(frozen=True)
class TableSlice:
    """Rows of a Delta table to check, and which versions they come from.

    ``after`` is the last version checked before (exclusive); None means the whole table.
    """

    frame: DataFrame
    end_version: int
    after: int | None = None
    note: str = ""

    def describe(self, name: str) -> str:
        """E.g. ``events v4..v9`` or ``events full@v9``."""
        if self.after is None:
            text = f"{name} full@v{self.end_version}"
        elif self.after >= self.end_version:
            text = f"{name} v{self.end_version} (nothing new)"
        else:
            text = f"{name} v{self.after + 1}..v{self.end_version}"
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True)
class CheckResult:
    """One expectation's outcome on one topic's slice; one row of dq_results."""

    topic: str
    check: CheckName
    expectation: str
    severity: Severity
    success: bool
    observed_value: str
    unexpected_count: int | None = None
    unexpected_sample: tuple[Coordinate, ...] = ()


@dataclass
class CheckReport:
    """The outcome of a run: its results and where to look further."""

    run_id: str
    run_time: datetime
    table: str
    slice_description: str
    results: list[CheckResult] = field(default_factory=list)
    docs_index: str | None = None

    @property
    def failed_errors(self) -> list[CheckResult]:
        """Failed checks of severity error: these fail the run."""
        return [r for r in self.results if not r.success and r.severity == "error"]

    @property
    def exit_code(self) -> int:
        """1 when a check of severity error failed, else 0."""
        return 1 if self.failed_errors else 0

    def render(self) -> str:
        """The run as a readable table with a verdict line.

        Example:
            >>> print(report.render())
            check 3f2a...: events v4..v9, rejects v3..v8
            topic  | check          | expectation                          | ...
        """
        header = ["topic", "check", "expectation", "severity", "success", "observed", "unexpected"]
        cells = [
            [
                r.topic,
                r.check.value,
                r.expectation,
                r.severity,
                "ok" if r.success else "FAILED",
                _clip(r.observed_value, 60),
                "" if r.unexpected_count is None else str(r.unexpected_count),
            ]
            for r in self.results
        ]
        lines = [f"check {self.run_id}: {self.slice_description}"]
        if cells:
            lines += text_table(header, cells)
        else:
            lines.append("nothing to check: no new rows and no configured topics")
        failed = [r for r in self.results if not r.success]
        warnings = len(failed) - len(self.failed_errors)
        lines.append(
            f"{len(self.results)} checks, {len(failed)} failed "
            f"({len(self.failed_errors)} error, {warnings} warning)"
            + (f"; Data Docs: {self.docs_index}" if self.docs_index else "")
        )
        lines.append("result: FAILED" if self.exit_code else "result: OK")
        return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- slices -------------------------------------------------------------------------


def new_data_files(commits: Iterable[Sequence[Mapping[str, Any]]]) -> list[str]:
    """Data files (log paths) holding the rows that these Delta commits added.

    Commits come oldest first, each as its list of actions:

    * ``add`` with ``dataChange`` true and no deletion vector: new rows (append, MERGE insert);
    * ``add`` with ``dataChange`` false: OPTIMIZE moved rows already counted: skipped;
    * ``add`` with a deletion vector: an existing file that lost rows: no new rows;
    * ``remove`` with ``dataChange`` true: its rows are gone (DELETE, overwrite), unless the
      same commit re-adds the file with a deletion vector (the remaining rows live on).

    Example:
        >>> new_data_files([[{"add": {"path": "a.parquet", "dataChange": True}}]])
        ['a.parquet']
    """
    files: dict[str, None] = {}  # an ordered set
    for actions in commits:
        readded = {
            a["add"]["path"] for a in actions if "add" in a and a["add"].get("deletionVector")
        }
        for action in actions:
            if "add" in action:
                add = action["add"]
                if add.get("dataChange", True) and not add.get("deletionVector"):
                    files[add["path"]] = None
            elif "remove" in action:
                remove = action["remove"]
                if remove.get("dataChange", True) and remove["path"] not in readded:
                    files.pop(remove["path"], None)
    return list(files)


def _read_commits(table: Path, first: int, last: int) -> list[list[dict[str, Any]]] | None:
    """The actions of commits first..last from the Delta log; None when one has expired."""
    commits = []
    for version in range(first, last + 1):
        path = table / "_delta_log" / f"{version:020d}.json"
        if not path.is_file():
            return None
        lines = path.read_text(encoding="utf-8").splitlines()
        commits.append([json.loads(line) for line in lines if line.strip()])
    return commits


def _data_file_path(table: Path, log_path: str) -> str:
    """A log path (URI-encoded, relative to the table unless absolute) as a readable path."""
    if urlparse(log_path).scheme:
        return log_path
    return str(table / unquote(log_path))


def read_slice(spark: SparkSession, table: Path, after: int | None) -> TableSlice:
    """The rows a Delta table gained after version ``after`` (None: the whole table).

    Why versions and not ``ingested_at``: ingest jobs for different topics commit
    concurrently, so a batch stamped earlier can commit after a later one and would fall
    behind an ``ingested_at`` high-water mark; commit versions have no such gap. The
    events table keeps change data off, so the slice is taken from the Delta log: the
    data files added by commits ``after+1 .. latest`` (:func:`new_data_files`) are read,
    and nothing else, so an incremental check costs what the new data costs.

    Fallbacks, named in the slice's note: expired log entries or vacuumed files give the
    whole table; partitioned or column-mapped tables are read through Delta, filtered to
    the new files by ``_metadata.file_name``.

    Example:
        >>> read_slice(spark, settings.table_path("events"), after=4).describe("events")
        'events v5..v9'
    """
    from delta.tables import DeltaTable

    if not (table / "_delta_log").is_dir():
        raise QualityError(f"No Delta table at {table}.")
    delta_table = DeltaTable.forPath(spark, str(table))
    history = delta_table.history(1).select("version").first()
    end = int(history[0]) if history is not None else 0
    snapshot = spark.read.format("delta").option("versionAsOf", end).load(str(table))
    if after is None:
        return TableSlice(snapshot, end)
    if after >= end:
        return TableSlice(spark.createDataFrame([], snapshot.schema), end, after)
    commits = _read_commits(table, after + 1, end)
    if commits is None:
        return TableSlice(snapshot, end, note=f"log of v{after + 1} expired: whole table")
    files = new_data_files(commits)
    if not files:
        return TableSlice(spark.createDataFrame([], snapshot.schema), end, after)
    detail = delta_table.detail().select("partitionColumns", "properties").first()
    partitioned = bool(detail and detail["partitionColumns"])
    properties = (detail["properties"] if detail else None) or {}
    mapped = properties.get("delta.columnMapping.mode", "none") != "none"
    if partitioned or mapped:
        names = [Path(unquote(urlparse(f).path)).name for f in files]
        return TableSlice(snapshot.where(F.col("_metadata.file_name").isin(names)), end, after)
    paths = [_data_file_path(table, f) for f in files]
    if not all(Path(p).exists() for p in paths if not urlparse(p).scheme):
        return TableSlice(snapshot, end, note="files of the slice were vacuumed: whole table")
    # Plain Parquet files of an unpartitioned table without column mapping: reading them
    # directly is what Delta's scan does for them, minus listing the other files.
    return TableSlice(spark.read.schema(snapshot.schema).parquet(*paths), end, after)


def last_checked_versions(
    spark: SparkSession, settings: Settings, request: CheckRequest
) -> tuple[int | None, int | None]:
    """Versions of (table, rejects) up to which an earlier run checked this request's rows.

    A run over all topics covers every topic; a ``--topic`` run covers its topic only.
    None: never checked (the whole table is new).
    """
    path = settings.table_path(DQ_RESULTS)
    if request.full or not (path / "_delta_log").is_dir():
        return None, None
    scope = F.col("topic_filter").isNull()
    if request.topic is not None:
        scope = scope | (F.col("topic_filter") == request.topic)
    row = (
        spark.read.format("delta")
        .load(str(path))
        .where((F.col("table") == request.table) & scope)
        .agg(F.max("table_version").alias("table"), F.max("rejects_version").alias("rejects"))
        .first()
    )
    if row is None:
        return None, None
    return row["table"], row["rejects"]


# --- checks -------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedCheck:
    """One expectation of a topic's suite and the Spark condition of its offending rows."""

    check: CheckName
    severity: Severity
    expectation: Expectation
    #: Rows breaking the rule (same semantics as the expectation), for the sample.
    unexpected: Column | None


def with_occurrences(slice_frame: DataFrame, table_frame: DataFrame, *, whole: bool) -> DataFrame:
    """Add how often each row's (source, id) occurs in the whole table.

    Duplicates of events checked in earlier slices count too: only the slice's keys are
    looked up (a semi join), so an incremental run scans two columns of the table.
    """
    keys = ["source", "id"]
    table_keys = table_frame.select(*keys)
    if not whole:
        table_keys = table_keys.join(slice_frame.select(*keys).distinct(), keys, "left_semi")
    counts = table_keys.groupBy(*keys).agg(F.count(F.lit(1)).alias(OCCURRENCES))
    # Null keys match nothing and stay null: the not-null checks report those rows.
    return slice_frame.join(counts, keys, "left")


def with_topic_columns(frame: DataFrame, rules: TopicRules) -> DataFrame:
    """Add the columns of per-topic rules: invalid extension names and the partitionkey."""
    name_pattern = f"^[a-z0-9]{{1,{rules.max_extension_name_length}}}\\z"
    bad_names = F.filter(F.map_keys("extensions"), lambda name: ~name.rlike(name_pattern))
    return frame.withColumns(
        {
            INVALID_EXTENSION_NAMES: F.when(
                F.size(bad_names) > 0, F.array_join(F.array_sort(bad_names), ", ")
            ),
            PARTITIONKEY: F.nullif(F.try_element_at("extensions", F.lit(PARTITIONKEY)), F.lit("")),
        }
    )


def plan_checks(
    rules: TopicRules, *, latest_time: datetime, has_occurrences: bool = True
) -> list[PlannedCheck]:
    """The expectations of one topic's events suite, in a stable order.

    ``latest_time`` is the latest ``time`` allowed (the run's start plus the skew); the
    expectation reads it from the suite parameter of that name, so the suite stays the
    same from run to run.

    Example:
        >>> rules = TopicRules(checks={CheckName.SPECVERSION})
        >>> [p.check.value for p in plan_checks(rules, latest_time=datetime.now(UTC))]
        ['specversion']
    """
    planned: list[PlannedCheck] = []

    def add(
        check: CheckName,
        text: str,
        expectation: type[Expectation],
        unexpected: Column | None,
        **kwargs: Any,
    ) -> None:
        if not rules.enabled(check):
            return
        severity = rules.severity_of(check)
        configured = expectation(
            **kwargs,
            # Replaces GX's sentence in Data Docs, so the page names the check. No "$"
            # in it: GX renders it as a template.
            description=f"{check.value} [{severity}]: {text}",
            meta={"eventlake_check": check.value, PLAN_INDEX: len(planned)},
        )
        planned.append(PlannedCheck(check, severity, configured, unexpected))

    for name in REQUIRED_ATTRIBUTES:
        add(
            CheckName.REQUIRED_NOT_NULL,
            f"{name} is present",
            ExpectColumnValuesToNotBeNull,
            F.col(name).isNull(),
            column=name,
        )
    for name in REQUIRED_ATTRIBUTES:
        add(
            CheckName.REQUIRED_NOT_EMPTY,
            f"{name} is not empty",
            ExpectColumnValueLengthsToBeBetween,
            F.col(name).isNotNull() & (F.length(name) < 1),
            column=name,
            min_value=1,
        )
    add(
        CheckName.SPECVERSION,
        f"specversion is {SPEC_VERSION}",
        ExpectColumnValuesToBeInSet,
        F.col("specversion").isNotNull() & ~F.col("specversion").isin(SPEC_VERSION),
        column="specversion",
        value_set=[SPEC_VERSION],
    )
    if has_occurrences:
        add(
            CheckName.UNIQUE_SOURCE_ID,
            "(source, id) occurs once in the whole events table",
            ExpectColumnValuesToBeBetween,
            F.col(OCCURRENCES) > 1,
            column=OCCURRENCES,
            max_value=1,
        )
    regex_checks: list[tuple[CheckName, str, str | None, str]] = [
        (
            CheckName.SOURCE_URI_REFERENCE,
            "source",
            URI_REFERENCE_PATTERN,
            "source is a URI-reference (RFC 3986)",
        ),
        (CheckName.TYPE_PATTERN, "type", rules.type_pattern, "type matches the topic's pattern"),
        (
            CheckName.DATACONTENTTYPE_MEDIA_TYPE,
            "datacontenttype",
            MEDIA_TYPE_PATTERN,
            "datacontenttype, when present, is a media type (RFC 2046)",
        ),
        (
            CheckName.DATASCHEMA_ABSOLUTE_URI,
            "dataschema",
            ABSOLUTE_URI_PATTERN,
            "dataschema, when present, is an absolute URI (RFC 3986)",
        ),
    ]
    for check, column, pattern, text in regex_checks:
        if pattern is not None:
            add(
                check,
                text,
                ExpectColumnValuesToMatchRegex,
                # As in GX (rlike, a search): a null is no mismatch.
                F.col(column).isNotNull() & ~F.col(column).rlike(pattern),
                column=column,
                regex=pattern,
            )
    add(
        CheckName.TIME_PRESENT,
        "time is present (the topic promises it)",
        ExpectColumnValuesToNotBeNull,
        F.col("time").isNull(),
        column="time",
    )
    add(
        CheckName.TIME_NOT_FUTURE,
        f"time is at most {rules.max_future_skew_seconds:g} s after the check started",
        ExpectColumnValuesToBeBetween,
        F.col("time") > F.lit(latest_time),
        column="time",
        max_value={"$PARAMETER": LATEST_TIME_PARAMETER},
    )
    add(
        CheckName.EXTENSION_NAMES,
        "extension names are lowercase letters and digits, at most "
        f"{rules.max_extension_name_length} characters",
        ExpectColumnValuesToBeNull,
        F.col(INVALID_EXTENSION_NAMES).isNotNull(),
        column=INVALID_EXTENSION_NAMES,
    )
    add(
        CheckName.PARTITIONKEY_PRESENT,
        "the partitionkey extension is present (keyed topic)",
        ExpectColumnValuesToNotBeNull,
        F.col(PARTITIONKEY).isNull(),
        column=PARTITIONKEY,
    )
    bounds = f"at least {rules.min_rows}" + (
        f" and at most {rules.max_rows}" if rules.max_rows is not None else ""
    )
    add(
        CheckName.ROW_COUNT,
        f"the slice has {bounds} events",
        ExpectTableRowCountToBeBetween,
        None,
        min_value=rules.min_rows,
        max_value=rules.max_rows,
    )
    return planned


# --- running ------------------------------------------------------------------------


def gx_context(settings: Settings) -> EphemeralDataContext:
    """A GX context whose stores and Data Docs site live under the warehouse.

    Ephemeral (no great_expectations.yml to keep in sync), but with filesystem stores:
    validation results accumulate under ``<warehouse>/_dq_gx``, so the Data Docs index at
    ``<warehouse>/dq_docs`` lists every run, not only the last.
    """
    config = DataContextConfig(
        store_backend_defaults=FilesystemStoreBackendDefaults(
            root_directory=str(settings.warehouse / GX_STORES)
        ),
        data_docs_sites={
            DOCS_SITE: {
                "class_name": "SiteBuilder",
                "show_how_to_buttons": False,
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    "base_directory": str(settings.warehouse / DQ_DOCS),
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
class _Validator:
    """GX objects shared by the topics of one run."""

    context: EphemeralDataContext
    events_batch: BatchDefinition[Any]
    stats_batch: BatchDefinition[Any]
    run_identifier: RunIdentifier
    # Validation results and their suites, mixed in one list as GX's UpdateDataDocsAction
    # passes them (build_data_docs' annotation admits only one kind at a time).
    result_ids: list[Any] = field(default_factory=list)

    @classmethod
    def create(cls, settings: Settings, run_id: str, run_time: datetime) -> _Validator:
        context = gx_context(settings)
        # persist=False: the slice is cached by run_checks, once, and released at the end;
        # GX's own persist is never undone.
        source = context.data_sources.add_or_update_spark("eventlake", persist=False)
        events = source.add_dataframe_asset(EVENTS).add_batch_definition_whole_dataframe("slice")
        stats = source.add_dataframe_asset("slice_counts").add_batch_definition_whole_dataframe(
            "slice"
        )
        return cls(context, events, stats, RunIdentifier(run_name=run_id, run_time=run_time))

    def validate(
        self,
        suite_name: str,
        batch: BatchDefinition[Any],
        expectations: list[Expectation],
        frame: DataFrame,
        parameters: dict[str, Any],
    ) -> ExpectationSuiteValidationResult:
        """Run a suite on a DataFrame; the result is stored for Data Docs."""
        suite = self.context.suites.add_or_update(
            gx.ExpectationSuite(name=suite_name, expectations=expectations)
        )
        definition = self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=suite_name, data=batch, suite=suite)
        )
        result = definition.run(
            batch_parameters={"dataframe": frame},
            expectation_parameters=parameters,
            result_format="SUMMARY",
            run_id=self.run_identifier,
        )
        suite_id = ExpectationSuiteIdentifier(name=suite_name)
        self.result_ids += [
            ValidationResultIdentifier(
                expectation_suite_identifier=suite_id,
                run_id=self.run_identifier,
                batch_identifier=result.batch_id,
            ),
            suite_id,
        ]
        return result

    def build_docs(self) -> str | None:
        """Render this run's results and the index page; the index's URL."""
        if not self.result_ids:
            return None
        urls = self.context.build_data_docs(
            site_names=[DOCS_SITE], resource_identifiers=self.result_ids
        )
        return str(urls.get(DOCS_SITE)) if urls.get(DOCS_SITE) else None


def _results_by_plan_index(
    outcome: ExpectationSuiteValidationResult,
) -> dict[int, ExpectationValidationResult]:
    """GX orders results its own way: key them by the plan index kept in their meta."""
    results = {}
    for result in outcome.results:
        configuration = result.expectation_config
        if configuration is None or configuration.meta is None:
            raise QualityError("GX returned a result without its expectation")
        results[int(configuration.meta[PLAN_INDEX])] = result
    return results


def _exception_message(info: Any) -> str | None:
    """GX nests exception details per metric; the first message found."""
    if isinstance(info, Mapping):
        if info.get("raised_exception") and info.get("exception_message"):
            return str(info["exception_message"])
        for value in info.values():
            found = _exception_message(value)
            if found:
                return found
    return None


def _observed(result: Mapping[str, Any]) -> str:
    if "observed_value" in result:
        return str(result["observed_value"])
    unexpected = result.get("unexpected_count")
    if unexpected is None:
        return ""
    text = f"{unexpected} of {result.get('element_count')} rows"
    examples = []
    for value in result.get("partial_unexpected_list") or []:
        shown = "null" if value is None else repr(value)
        if shown not in examples:
            examples.append(_clip(shown, 40))
        if len(examples) == 3:
            break
    return text + (f"; e.g. {', '.join(examples)}" if examples and unexpected else "")


def _expectation_label(configuration: Any) -> str:
    kwargs = configuration.kwargs
    target = kwargs.get("column") or ",".join(kwargs.get("column_list") or [])
    return f"{configuration.type}({target})"


def _sample(frame: DataFrame, condition: Column) -> tuple[Coordinate, ...]:
    rows = (
        frame.where(condition)
        .select(*COORDINATES)
        .orderBy(*COORDINATES)
        .limit(SAMPLE_SIZE)
        .collect()
    )
    return tuple((r["kafka_topic"], r["kafka_partition"], r["kafka_offset"]) for r in rows)


def _check_topic(
    validator: _Validator,
    topic: str,
    rules: TopicRules,
    events: DataFrame,
    *,
    run_time: datetime,
    has_occurrences: bool,
) -> list[CheckResult]:
    """Validate one topic's events slice against its rules; results in plan order."""
    latest = run_time + timedelta(seconds=rules.max_future_skew_seconds)
    planned = plan_checks(rules, latest_time=latest, has_occurrences=has_occurrences)
    if not planned:
        return []
    frame = with_topic_columns(events.where(F.col("kafka_topic") == topic), rules)
    outcome = validator.validate(
        f"{EVENTS}.{topic}",
        validator.events_batch,
        [p.expectation for p in planned],
        frame,
        {LATEST_TIME_PARAMETER: latest},
    )
    by_index = _results_by_plan_index(outcome)
    results: list[CheckResult] = []
    for index, plan in enumerate(planned):
        result = by_index[index]
        details = result.result or {}
        error = _exception_message(result.exception_info)
        success = bool(result.success) and error is None
        sample: tuple[Coordinate, ...] = ()
        if not success and error is None and plan.unexpected is not None:
            sample = _sample(frame, plan.unexpected)
        results.append(
            CheckResult(
                topic=topic,
                check=plan.check,
                expectation=_expectation_label(result.expectation_config),
                severity=plan.severity,
                success=success,
                observed_value=f"error: {_clip(error, 200)}" if error else _observed(details),
                unexpected_count=details.get("unexpected_count"),
                unexpected_sample=sample,
            )
        )
    return results


def _check_rejects_rates(
    validator: _Validator,
    rules: Mapping[str, TopicRules],
    counts: Mapping[str, tuple[int, int]],
    rejects: DataFrame,
) -> list[CheckResult]:
    """Rejects / (events + rejects) per topic, validated on a frame of one row per topic.

    One suite for all topics (one expectation per topic, restricted with a row condition)
    costs one GX run instead of one per topic.
    """
    topics = [t for t, r in rules.items() if r.enabled(CheckName.REJECTS_RATE)]
    if not topics:
        return []
    rows = []
    expectations: list[Expectation] = []
    for index, topic in enumerate(topics):
        events_count, rejects_count = counts.get(topic, (0, 0))
        total = events_count + rejects_count
        rows.append((topic, events_count, rejects_count, rejects_count / total if total else 0.0))
        threshold = rules[topic].max_rejects_rate
        severity = rules[topic].severity_of(CheckName.REJECTS_RATE)
        expectations.append(
            ExpectColumnMaxToBeBetween(
                column="rejects_rate",
                max_value=threshold,
                row_condition=GxColumn("kafka_topic") == topic,
                description=f"{CheckName.REJECTS_RATE.value} [{severity}]: at most "
                f"{threshold:.2%} of the records of topic {topic} are rejects",
                meta={"eventlake_check": CheckName.REJECTS_RATE.value, PLAN_INDEX: index},
            )
        )
    frame = rejects.sparkSession.createDataFrame(rows, _STATS_SCHEMA)
    outcome = validator.validate(
        f"{EVENTS}.rejects_rate", validator.stats_batch, expectations, frame, {}
    )
    by_index = _results_by_plan_index(outcome)
    results = []
    for index, (topic, events_count, rejects_count, rate) in enumerate(rows):
        result = by_index[index]
        error = _exception_message(result.exception_info)
        success = bool(result.success) and error is None
        sample: tuple[Coordinate, ...] = ()
        if not success and error is None:
            sample = _sample(rejects, F.col("kafka_topic") == topic)
        results.append(
            CheckResult(
                topic=topic,
                check=CheckName.REJECTS_RATE,
                expectation=_expectation_label(result.expectation_config),
                severity=rules[topic].severity_of(CheckName.REJECTS_RATE),
                success=success,
                observed_value=f"error: {_clip(error, 200)}"
                if error
                else f"{rate:.4f} ({rejects_count} of {events_count + rejects_count} records "
                "rejected)",
                unexpected_count=rejects_count,
                unexpected_sample=sample,
            )
        )
    return results


def _topic_counts(frame: DataFrame) -> dict[str, int]:
    rows = frame.groupBy("kafka_topic").count().collect()
    return {r["kafka_topic"]: int(r["count"]) for r in rows}


def _write_results(
    spark: SparkSession,
    settings: Settings,
    report: CheckReport,
    request: CheckRequest,
    versions: tuple[int, int],
) -> None:
    rows = [
        (
            report.run_id,
            report.run_time,
            report.table,
            report.slice_description,
            r.topic,
            r.check.value,
            r.expectation,
            r.severity,
            r.success,
            r.observed_value,
            r.unexpected_count,
            [
                {"kafka_topic": t, "kafka_partition": p, "kafka_offset": o}
                for t, p, o in r.unexpected_sample
            ],
            request.topic,
            versions[0],
            versions[1],
        )
        for r in report.results
    ]
    if rows:
        spark.createDataFrame(rows, DQ_RESULTS_SCHEMA).write.format("delta").mode("append").save(
            str(settings.table_path(DQ_RESULTS))
        )


def run_checks(
    spark: SparkSession,
    settings: Settings,
    request: CheckRequest,
    *,
    config: QualityConfig | None = None,
) -> CheckReport:
    """Check the new slice (or the whole table) of the events table; see the module doc.

    ``config`` defaults to ``settings.quality``. Topics checked: those in the slice (events
    or rejects) plus the configured ones (their row-count bounds catch a topic that went
    quiet), or only ``request.topic``.

    Example:
        >>> report = run_checks(spark, settings, CheckRequest(full=True))
        >>> [r.check for r in report.failed_errors]
        [<CheckName.SOURCE_URI_REFERENCE: 'source_uri_reference'>]
    """
    try:
        rules_config = config or load_quality_config(settings.quality)
    except QualityConfigError as error:
        raise QualityError(str(error)) from error
    table_path = settings.table_path(request.table)
    if not (table_path / "_delta_log").is_dir():
        raise QualityError(f"No {request.table} table at {table_path}: run `eventlake ingest`.")
    run_time = datetime.now(UTC)
    run_id = uuid.uuid4().hex
    after_table, after_rejects = last_checked_versions(spark, settings, request)
    events_slice = read_slice(spark, table_path, after_table)
    rejects_path = settings.table_path(REJECTS)
    rejects_slice = (
        read_slice(spark, rejects_path, after_rejects)
        if (rejects_path / "_delta_log").is_dir()
        else None
    )
    description = events_slice.describe(request.table) + (
        f", {rejects_slice.describe(REJECTS)}" if rejects_slice else ", rejects absent"
    )
    events = events_slice.frame
    rejects = (
        # Only the ingest job's rejects: republish records its own reads of a topic too.
        # (Rows written before rejected_by existed have it null; they were ingest's.)
        rejects_slice.frame.where(rejected_by_ingest())
        if rejects_slice
        else spark.createDataFrame([], "kafka_topic string, kafka_partition int, kafka_offset long")
    )
    if request.topic is not None:
        events = events.where(F.col("kafka_topic") == request.topic)
        rejects = rejects.where(F.col("kafka_topic") == request.topic)
        description += f", topic {request.topic}"
    report = CheckReport(run_id, run_time, request.table, description)

    configured = list(rules_config.topics)
    uniqueness = rules_config.defaults.enabled(CheckName.UNIQUE_SOURCE_ID) or any(
        rules_config.rules_for(t).enabled(CheckName.UNIQUE_SOURCE_ID) for t in configured
    )
    if uniqueness:
        # Against the table as of the slice's end, so both sides agree on what exists.
        table = (
            spark.read.format("delta")
            .option("versionAsOf", events_slice.end_version)
            .load(str(table_path))
        )
        events = with_occurrences(events, table, whole=events_slice.after is None)
    # Every expectation scans the slice: read and derive it once.
    events = events.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        event_counts = _topic_counts(events)
        reject_counts = _topic_counts(rejects)
        if request.topic is not None:
            topics = [request.topic]
        else:
            topics = sorted(set(event_counts) | set(reject_counts) | set(configured))
        if topics:
            validator = _Validator.create(settings, run_id, run_time)
            rules = {topic: rules_config.rules_for(topic) for topic in topics}
            for topic in topics:
                report.results += _check_topic(
                    validator,
                    topic,
                    rules[topic],
                    events,
                    run_time=run_time,
                    has_occurrences=uniqueness,
                )
            counts = {t: (event_counts.get(t, 0), reject_counts.get(t, 0)) for t in topics}
            report.results += _check_rejects_rates(validator, rules, counts, rejects)
            # Grouped by topic for reading; the sort is stable, plan order stays.
            report.results.sort(key=lambda r: r.topic)
            report.docs_index = validator.build_docs()
        rejects_version = rejects_slice.end_version if rejects_slice else -1
        # Last: the versions recorded here are where the next incremental run starts.
        _write_results(
            spark, settings, report, request, (events_slice.end_version, rejects_version)
        )
    finally:
        events.unpersist()
    return report
