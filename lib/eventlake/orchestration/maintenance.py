"""The maintenance DAG (``eventlake_maintenance``): its options and its one spark-submit.

Example:
    >>> plan_maintenance({"dry_run": True}, settings)["application_args"]
    ['--retention-hours', '168', '--auto-reconcile', '--dry-run']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from airflow.sdk import Param

from eventlake.core.settings import Settings
from eventlake.core.topic_names import topic_name_schema
from eventlake.orchestration.errors import OrchestrationError
from eventlake.orchestration.options import (
    cli_args,
    dag_params,
    option,
    read_params,
    selection,
    switch,
)
from eventlake.orchestration.submit import submit_kwargs
from eventlake.orchestration.topics import check_topic

#: Default VACUUM retention of the maintenance DAG: Delta's safety default (7 days).
MAINTENANCE_RETENTION_HOURS: Final = 168.0


@dataclass(frozen=True)
class MaintenanceParams:
    """The maintenance DAG's params, checked, including what a JSON schema cannot: a
    retention below 168 hours needs ``allow_below_safety``.

    Example:
        >>> MaintenanceParams.from_params({"retention_hours": 0, "allow_below_safety": True})
        MaintenanceParams(retention_hours=0.0, allow_below_safety=True, auto_reconcile=True, ...)
        >>> MaintenanceParams.from_params({"retention_hours": 24})
        Traceback (most recent call last):
        ...
        eventlake.orchestration.errors.OrchestrationError: retention_hours=24 is below Delta's ...
    """

    retention_hours: float = field(
        default=MAINTENANCE_RETENTION_HOURS,
        metadata=option(
            "VACUUM retention (hours)",
            "Files no table version of the last N hours needs are deleted. "
            "Below 168 (Delta's safety default) only with allow_below_safety.",
            flag="--retention-hours",
            type="number",
            minimum=0,
        ),
    )
    allow_below_safety: bool = switch(
        "Allow a retention below 168 hours",
        "VACUUM may then delete files that running streams or readers of "
        "recent versions still need.",
        flag="--allow-below-safety",
    )
    # Passed either way: the DAG reconciles by default, whatever the job's default.
    auto_reconcile: bool = switch(
        "Auto-reconcile",
        "Rebuild a state table from its topic when tombstones may have been "
        "compacted away unseen (otherwise only warn).",
        flag="--auto-reconcile/--no-auto-reconcile",
        default=True,
    )
    # The job's own dry run: it is submitted and reports what it would do.
    dry_run: bool = switch(
        "Dry run",
        "Change nothing: report what VACUUM would delete and which state tables are at risk.",
        flag="--dry-run",
    )
    #: State topics to check; empty: every state table in the warehouse.
    topics: tuple[str, ...] = selection(
        "State topics",
        "Compacted topics to check for missed tombstones; empty: every "
        "state table in the warehouse.",
        items=topic_name_schema(),
        flag="--topic",
    )

    def __post_init__(self) -> None:
        # Lazily: the DAG file imports this module, and eventlake.maintenance.run imports Spark.
        from eventlake.maintenance.request import MaintenanceError, check_retention

        for topic in self.topics:
            check_topic(topic)
        try:
            check_retention(self.retention_hours, self.allow_below_safety)
        except MaintenanceError as error:
            raise OrchestrationError(str(error)) from None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> MaintenanceParams:
        """Build from a DAG run's params (missing keys take the defaults).

        Example:
            >>> MaintenanceParams.from_params({}).retention_hours
            168.0
        """
        return cls(**read_params(cls, params))

    def application_args(self) -> list[str]:
        """Arguments of ``jobs/maintain.py`` (``eventlake maintain``).

        Example:
            >>> MaintenanceParams(retention_hours=0, allow_below_safety=True).application_args()
            ['--retention-hours', '0', '--allow-below-safety', '--auto-reconcile']
        """
        return cli_args(self)


def plan_maintenance(params: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """The :func:`~eventlake.orchestration.submit.submit_kwargs` of the maintenance job,
    from a DAG run's params.

    Raises :class:`OrchestrationError` on bad params (a retention below 168 hours without
    ``allow_below_safety`` among them), before anything is submitted.

    Example:
        >>> plan_maintenance({"dry_run": True}, settings)["application_args"]
        ['--retention-hours', '168', '--auto-reconcile', '--dry-run']
    """
    checked = MaintenanceParams.from_params(params)
    return submit_kwargs(settings, checked.application_args())


def maintenance_params() -> dict[str, Param]:
    """The maintenance DAG's params: JSON-schema validated by Airflow before a run is
    created; the cross-check of ``retention_hours`` and ``allow_below_safety`` is the
    DAG's first task (:func:`plan_maintenance`).

    Example:
        >>> list(maintenance_params())
        ['retention_hours', 'allow_below_safety', 'auto_reconcile', 'topics', 'dry_run']
    """
    return dag_params(MaintenanceParams)
