"""Which typed tables the warehouse has, and how far each is behind ``events``, read
from their logs with delta-rs (no pyspark: ``eventlake status`` and the Airflow status
page import this). A typed table's property ``eventlake.eventType`` names its type: the
one source of which table is whose.

Example:
    >>> typed_lag(settings)
    {'com.example.order.paid': 0}
"""

from __future__ import annotations

from typing import Final

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.ledger.marks import INGEST, TYPED, Marks, read_marks
from eventlake.storage.store import names
from eventlake.warehouse.delta_log import delta_rs_table
from eventlake.warehouse.names import EVENTS, TYPED_FOLDER, is_delta_table

#: The table property naming a typed table's event type.
EVENT_TYPE_PROPERTY: Final = "eventlake.eventType"


def typed_tables(settings: Settings) -> dict[str, Location]:
    """Per event type, its typed table (those whose first commit is written), read from
    each table's ``eventlake.eventType`` property (delta-rs, no Spark).

    Example:
        >>> typed_tables(settings)
        {'com.example.order.paid': Location('/wh/typed/com_example_order_paid')}
    """
    folder = settings.warehouse / TYPED_FOLDER
    found: dict[str, Location] = {}
    for name in sorted(names(folder)):
        path = folder / name
        if name.startswith("_") or not is_delta_table(path):
            continue
        event_type = table_event_type(path)
        if event_type is not None and event_type not in found:
            found[event_type] = path
    return found


def table_event_type(path: Location) -> str | None:
    """The event type of the typed table at ``path``; None when it has none.

    Example:
        >>> table_event_type(settings.warehouse / "typed/com_example_order_paid")
        'com.example.order.paid'
    """
    table = delta_rs_table(path)
    if table is None:
        return None
    found = table.metadata().configuration.get(EVENT_TYPE_PROPERTY)
    return None if found is None else str(found)


def frontier(ends: Marks, table_marks: dict[str, Marks]) -> Marks:
    """Per partition of ``ends``, the lowest mark of the typed tables that hold marks for
    its topic (a partition one of them lacks: 0); 0 where none does. No event below it
    is missing from its type's table (:mod:`eventlake.typed.step`).

    Example:
        >>> frontier({("o", 0): 9, ("p", 0): 4}, {"a": {("o", 0): 5}, "b": {("o", 0): 7}})
        {('o', 0): 5, ('p', 0): 0}
    """
    low: Marks = {}
    for key in ends:
        holding = [m for m in table_marks.values() if any(t == key[0] for t, _ in m)]
        low[key] = min((m.get(key, 0) for m in holding), default=0)
    return low


def typed_lag(settings: Settings, topics: list[str]) -> dict[str, int]:
    """Per typed table's event type, how many offsets of ``topics`` the events table has
    landed that it may still lack: those above its own marks in the topics it holds
    marks for, and all of a topic no typed table holds marks for (0: current).

    Example:
        >>> typed_lag(settings, ["demo.orders"])
        {'com.example.order.paid': 120}
    """
    _, landed = read_marks(settings.table_path(EVENTS), INGEST, topics)
    tables = typed_tables(settings)
    marks = {t: read_marks(path, TYPED, topics)[1] for t, path in tables.items()}
    low = frontier(landed, marks)
    lag: dict[str, int] = {}
    for event_type, own in marks.items():
        held = {t for t, _ in own}
        lag[event_type] = sum(
            end - (own.get(key, 0) if key[0] in held else low[key])
            for key, end in landed.items()
            if key[0] in held or low[key] == 0
        )
    return lag
