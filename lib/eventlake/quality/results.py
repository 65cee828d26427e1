"""A check run's results, its report, and their table ``dq_results``.

One row per expectation and topic is appended to ``<warehouse>/dq_results`` (schema in
:mod:`eventlake.warehouse.tables`) at the end of a run (:func:`write_results`), with the versions
it checked; the next incremental run reads them back (:func:`last_checked_versions`) and
starts after them.

Example:
    >>> report = CheckReport("3f2a", datetime.now(UTC), "events", "events full@v9")
    >>> report.exit_code
    0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from eventlake.core.settings import Settings
from eventlake.core.text_table import text_table
from eventlake.quality.config import CheckName, Severity
from eventlake.quality.request import CheckRequest
from eventlake.warehouse.delta_log import delta_rs_table
from eventlake.warehouse.names import DQ_RESULTS
from eventlake.warehouse.schemas import DQ_RESULTS_SCHEMA
from eventlake.warehouse.tables import append_rows

#: Where an offending record is in Kafka: (topic, partition, offset).
Coordinate = tuple[str, int, int]


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
    #: The signal that stopped the run before it recorded anything (None: it ran through).
    stopped_by: str | None = None

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
                clip(r.observed_value, 60),
                "" if r.unexpected_count is None else str(r.unexpected_count),
            ]
            for r in self.results
        ]
        lines = [f"check {self.run_id}: {self.slice_description}"]
        if self.stopped_by is not None:
            lines.append(
                f"stopped by {self.stopped_by} before recording its results: dq_results is "
                "as before, and the next run checks the same rows"
            )
            lines.append("result: STOPPED")
            return "\n".join(lines)
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


def clip(text: str, limit: int) -> str:
    """The text, cut to ``limit`` characters with an ellipsis when longer.

    Example:
        >>> clip("expect_column_values_to_not_be_null", 12)
        'expect_co...'
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


def write_results(
    settings: Settings,
    report: CheckReport,
    request: CheckRequest,
    versions: tuple[int, int],
) -> None:
    """Append the report's rows to dq_results, with the (table, rejects) versions checked.

    Example:
        >>> write_results(settings, report, CheckRequest(), versions=(9, 8))
    """
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
    # With delta-rs: a Delta write through Spark would be the run's only Delta command
    # (its first in a process takes ~2 s), for a few dozen rows.
    append_rows(settings.table_path(DQ_RESULTS), rows, DQ_RESULTS_SCHEMA)


def last_checked_versions(
    settings: Settings, request: CheckRequest
) -> tuple[int | None, int | None]:
    """Versions of (table, rejects) up to which an earlier run checked this request's rows,
    read with delta-rs (no Spark).

    A run over all topics covers every topic; a ``--topic`` run covers its topic only.
    None: never checked (the whole table is new).

    Example:
        >>> last_checked_versions(settings, CheckRequest(topic="orders"))
        (42, 17)
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = delta_rs_table(settings.table_path(DQ_RESULTS))
    if request.full or table is None:
        return None, None
    results = pa.table(
        table.to_pyarrow_table(
            columns=["table", "topic_filter", "table_version", "rejects_version"]
        )
    )
    scope = pc.is_null(results["topic_filter"])
    if request.topic is not None:
        scope = pc.or_kleene(scope, pc.equal(results["topic_filter"], request.topic))
    mine = results.filter(pc.and_kleene(pc.equal(results["table"], request.table), scope))
    return pc.max(mine["table_version"]).as_py(), pc.max(mine["rejects_version"]).as_py()
