"""The last data-quality verdict per topic, read from ``dq_results`` with delta-rs.

``eventlake check`` appends one row per expectation and topic to ``dq_results``
(:mod:`eventlake.quality.results`). For a status report only the newest run that
checked a topic matters: how many of its checks ran, how many failed, and whether one
of severity ``error`` failed (which fails the quality DAG). Read without Spark and
without Great Expectations (this module sits outside :mod:`eventlake.quality`, whose
package import loads GX), so that ``eventlake status`` and the Airflow page stay quick.

Example:
    >>> last_verdicts(settings)["demo.orders"].verdict
    'ok'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

from eventlake.core.settings import Settings
from eventlake.warehouse.delta_log import delta_rs_table
from eventlake.warehouse.names import DQ_RESULTS

Verdict = Literal["ok", "warning", "failed"]
#: The columns a verdict needs; the others (samples, versions) are never read.
_COLUMNS: Final = ("run_id", "run_time", "topic", "severity", "success")


@dataclass(frozen=True)
class QualityVerdict:
    """A topic's newest check run: ``failed`` when a check of severity error failed,
    ``warning`` when only warnings failed, else ``ok``."""

    topic: str
    run_id: str
    run_time: datetime | None
    checks: int
    failed_errors: int
    failed_warnings: int

    @property
    def verdict(self) -> Verdict:
        if self.failed_errors:
            return "failed"
        return "warning" if self.failed_warnings else "ok"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, as ``eventlake status --json`` prints it under ``quality``.

        Example:
            >>> QualityVerdict("t", "3f2a", None, 14, 0, 1).to_json()["verdict"]
            'warning'
        """
        return {
            "verdict": self.verdict,
            "run_id": self.run_id,
            "run_time": self.run_time.isoformat() if self.run_time else None,
            "checks": self.checks,
            "failed_errors": self.failed_errors,
            "failed_warnings": self.failed_warnings,
        }


def last_verdicts(settings: Settings, topics: tuple[str, ...] = ()) -> dict[str, QualityVerdict]:
    """Per topic (only ``topics``, when given), the verdict of the newest run that
    checked it; {} when no check has run yet.

    Example:
        >>> last_verdicts(settings, ("demo.orders",))["demo.orders"].to_json()["checks"]
        14
    """
    rows = _result_rows(settings)
    newest: dict[str, tuple[datetime | None, str]] = {}
    for row in rows:
        topic = row["topic"]
        if topic is None or (topics and topic not in topics):
            continue
        key = (row["run_time"], row["run_id"])
        if topic not in newest or _later(key, newest[topic]):
            newest[topic] = key
    return {
        topic: _verdict(topic, run_id, run_time, rows)
        for topic, (run_time, run_id) in sorted(newest.items())
    }


def _result_rows(settings: Settings) -> list[dict[str, Any]]:
    """dq_results' rows (the needed columns only); [] when the table is not there."""
    table = delta_rs_table(settings.table_path(DQ_RESULTS))
    if table is None:  # no quality run yet, or the first one is creating the table
        return []
    rows: list[dict[str, Any]] = table.to_pyarrow_table(columns=list(_COLUMNS)).to_pylist()
    return rows


def _later(key: tuple[datetime | None, str], than: tuple[datetime | None, str]) -> bool:
    # A run without a time (never written so, but a null is legal) counts as oldest.
    floor = datetime.min.replace(tzinfo=UTC)
    return (_aware(key[0]) or floor, key[1]) > (_aware(than[0]) or floor, than[1])


def _aware(moment: datetime | None) -> datetime | None:
    """Spark's timestamps read back naive from Parquet; they are UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def _verdict(
    topic: str, run_id: str, run_time: datetime | None, rows: list[dict[str, Any]]
) -> QualityVerdict:
    mine = [r for r in rows if r["topic"] == topic and r["run_id"] == run_id]
    failed = [r for r in mine if not r["success"]]
    errors = sum(1 for r in failed if r["severity"] == "error")
    return QualityVerdict(
        topic=topic,
        run_id=run_id,
        run_time=_aware(run_time),
        checks=len(mine),
        failed_errors=errors,
        failed_warnings=len(failed) - errors,
    )
