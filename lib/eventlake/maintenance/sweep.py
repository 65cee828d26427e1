"""The compaction sweep: Kafka's compaction check of every state table, reconciling
those at risk when asked.

Example:
    >>> compaction_sweep(spark, settings, topics=(), auto_reconcile=True)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eventlake.core.settings import Settings
from eventlake.kafka.connection import check_connection
from eventlake.kafka.topics import missing_topics
from eventlake.maintenance.request import check_topics
from eventlake.warehouse.names import (
    is_delta_table,
    state_path,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from eventlake.state.reconcile import ReconcileReport


@dataclass(frozen=True)
class SweepResult:
    """The compaction check of one state topic, and the reconcile it triggered, if any."""

    topic: str
    at_risk: bool
    message: str
    reconciled: ReconcileReport | None = None
    #: False when the topic could not be checked (it is no longer on Kafka).
    checked: bool = True

    def line(self) -> str:
        """The check's message, followed by the reconcile's summary when one ran.

        Example:
            >>> SweepResult("customers", False, "customers: compacted ...").line()
            'customers: compacted ...'
        """
        if self.reconciled is None:
            return self.message
        return f"{self.message}\n{self.reconciled.line()}"


def compaction_sweep(
    spark: SparkSession,
    settings: Settings,
    topics: Sequence[str],
    auto_reconcile: bool,
    *,
    dry_run: bool = False,
    now_ms: int | None = None,
) -> list[SweepResult]:
    """Check each state topic for tombstones compacted away unseen; reconcile when at risk.

    A topic is at risk when its state table was last updated longer ago than the topic's
    ``delete.retention.ms`` and records are waiting (see
    :func:`eventlake.state.compaction_risk.check_compaction`). With ``auto_reconcile`` (and not
    ``dry_run``) an at-risk state table is rebuilt from the topic by
    :func:`eventlake.state.reconcile.reconcile_state`; otherwise the result only warns.
    ``now_ms`` overrides the clock of the check.

    Example:
        >>> [r.at_risk for r in compaction_sweep(spark, settings, ["customers"], True)]
        [False]
    """
    check_topics(topics)
    from eventlake.state.compaction_risk import check_compaction
    from eventlake.state.reconcile import reconcile_state

    results: list[SweepResult] = []
    if topics:
        check_connection(settings)
    # A state table may outlive its topic: that one is reported, the others are checked.
    gone = set(missing_topics(settings, topics))
    for topic in dict.fromkeys(topics):
        if topic in gone:
            where = (
                f"{topic}: not checked: the topic does not exist on Kafka at "
                f"{settings.bootstrap_servers}"
            )
            message = (
                f"{where}; state/{topic} is left as it is (remove the folder if the topic "
                "is gone for good)"
                if is_delta_table(state_path(settings, topic))
                else f"{where}, and the warehouse has no state/{topic} table: check the name"
            )
            results.append(SweepResult(topic, False, message, checked=False))
            continue
        report = check_compaction(spark, settings, topic, now_ms=now_ms)
        reconciled = None
        if report.at_risk and auto_reconcile and not dry_run:
            reconciled = reconcile_state(spark, settings, topic)
        results.append(SweepResult(topic, report.at_risk, report.message, reconciled))
    return results
