"""What a check run is asked to do (:class:`CheckRequest`), and the error that stops a
run from starting (:class:`QualityError`).

Example:
    >>> CheckRequest(topic="orders")
    CheckRequest(table='events', full=False, topic='orders')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from eventlake.tables import EVENTS

CHECKABLE_TABLES: Final = (EVENTS,)


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
