"""What ``eventlake maintain`` is asked to do, checked when made: the VACUUM retention
(refused below Delta's 7-day safety unless allowed), the topics, reconcile or not.

Example:
    >>> MaintenanceRequest(retention_hours=24).retention_hours
    Traceback (most recent call last):
    MaintenanceError: ...
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from eventlake.core.errors import Refused
from eventlake.core.topic_names import InvalidTopicNameError, check_topic_name

#: Delta's default ``delta.deletedFileRetentionDuration`` (7 days): VACUUM's safety floor.
SAFETY_RETENTION_HOURS: Final = 168.0


class MaintenanceError(Refused, ValueError):
    """A maintenance request is refused before anything runs; the message says why."""


def check_retention(retention_hours: float | None, allow_below_safety: bool = False) -> None:
    """Refuse a VACUUM retention that is not a finite number, is negative, or is below 168
    hours without the override.

    ``None`` means the table's own retention (Delta's default: 168 hours) and passes.

    Example:
        >>> check_retention(168)
        >>> check_retention(0, allow_below_safety=True)
        >>> check_retention(24)
        Traceback (most recent call last):
        ...
        eventlake.maintenance.request.MaintenanceError: retention_hours=24 is below Delta's safety
        ...
    """
    if retention_hours is None:
        return
    if isinstance(retention_hours, bool) or not isinstance(retention_hours, int | float):
        raise MaintenanceError(f"retention_hours must be a number, not {retention_hours!r}.")
    if not math.isfinite(retention_hours):
        # Delta rounds NaN to 0 hours: a VACUUM of every file no version needs.
        raise MaintenanceError(
            f"retention_hours must be a finite number of hours, not {retention_hours!r}."
        )
    if retention_hours < 0:
        raise MaintenanceError(f"retention_hours must be >= 0, not {retention_hours!r}.")
    if retention_hours < SAFETY_RETENTION_HOURS and not allow_below_safety:
        raise MaintenanceError(
            f"retention_hours={retention_hours:g} is below Delta's safety retention of "
            f"{SAFETY_RETENTION_HOURS:g} hours: VACUUM could delete files that running streams "
            "or readers of recent table versions still need. Set allow_below_safety=true "
            "(--allow-below-safety) to do it anyway."
        )


@dataclass(frozen=True)
class MaintenanceRequest:
    """What ``eventlake maintain`` is asked to do (the maintenance DAG's params).

    ``topics`` empty: every state table in the warehouse. Refused on creation
    (:class:`MaintenanceError`): a retention below 168 hours without
    ``allow_below_safety``, a name that is not a topic's.

    Example:
        >>> MaintenanceRequest(retention_hours=24)
        Traceback (most recent call last):
        ...
        eventlake.maintenance.request.MaintenanceError: retention_hours=24 is below Delta's ...
    """

    retention_hours: float = SAFETY_RETENTION_HOURS
    allow_below_safety: bool = False
    topics: tuple[str, ...] = ()
    auto_reconcile: bool = True
    dry_run: bool = False

    def __post_init__(self) -> None:
        check_retention(self.retention_hours, self.allow_below_safety)
        check_topics(self.topics)


def check_topics(topics: Sequence[str]) -> None:
    for topic in topics:
        try:
            check_topic_name(topic, "topic")
        except InvalidTopicNameError as error:
            raise MaintenanceError(str(error)) from None
