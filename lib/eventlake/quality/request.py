"""What a check run is asked to do (:class:`CheckRequest`), and the error that stops a
run from starting (:class:`QualityError`).

Example:
    >>> CheckRequest(topic="orders")
    CheckRequest(table='events', full=False, topic='orders')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from eventlake.core.errors import Refused
from eventlake.core.settings import Settings
from eventlake.ledger.marks import INGEST, read_marks
from eventlake.warehouse.names import EVENTS, is_delta_table

CHECKABLE_TABLES: Final = (EVENTS,)


class QualityError(Refused, RuntimeError):
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


def require_checkable(settings: Settings, request: CheckRequest) -> None:
    """Refuse, before any Spark work, a check of a table that is not there or of a topic
    that no ingest has landed a record of (a misspelt topic would otherwise check zero
    rows and pass). Read from the table's log with delta-rs: its ingest marks.

    Example:
        >>> require_checkable(settings, CheckRequest(topic="ordres"))
        Traceback (most recent call last):
        QualityError: No record of topic 'ordres' has landed in events ...
    """
    table_path = settings.table_path(request.table)
    if not is_delta_table(table_path):
        raise QualityError(f"No {request.table} table at {table_path}: run `eventlake ingest`.")
    if request.topic is None:
        return
    _, marks = read_marks(table_path, INGEST, [request.topic])
    if not marks:
        raise QualityError(
            f"No record of topic {request.topic!r} has landed in {request.table}: check the "
            "name (`eventlake status` lists the topics landed), or run `eventlake ingest "
            f"--topic {request.topic}` first."
        )
