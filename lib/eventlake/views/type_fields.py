"""The typed views' columns as the warehouse keeps them (``_types/fields.json``): per
event type its fields, where they came from and its dataschema, saved whole or not at
all, read back by ``eventlake query``, ``views`` and maintenance.

Example:
    >>> load_columns(fields_path(settings.warehouse))["com.example.order.paid"].fields
    {'amount': 'DECIMAL(38,2)', 'order_id': 'STRING'}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from eventlake.core.locations import Location
from eventlake.storage.store import read_text, write_text

#: Where, under the warehouse, the inferred fields of every type are kept.
FIELDS_FILE: Final = "_types/fields.json"


def fields_path(warehouse: Location) -> Location:
    """Where the warehouse keeps the inferred fields of its event types.

    Example:
        >>> fields_path(Location.of("/wh"))
        Location('/wh/_types/fields.json')
    """
    return warehouse / FIELDS_FILE


@dataclass(frozen=True)
class TypeColumns:
    """A typed view's columns of one type (field -> Spark type), and where they came
    from: its newest event's ``dataschema`` when that was read, else its data."""

    fields: dict[str, str]
    #: The newest event's dataschema; None when it has none.
    dataschema: str | None = None
    #: Why that dataschema was not used (the columns are the data's); None when it was.
    unread: str | None = None

    @property
    def from_dataschema(self) -> bool:
        """Whether the schema gave the columns (those it declares)."""
        return self.dataschema is not None and self.unread is None

    def source(self) -> str:
        """Where the columns came from, for a person.

        Example:
            >>> TypeColumns({}, "https://x/s.json", "http(s) dataschemas are not fetched").source()
            'data (dataschema https://x/s.json not read: http(s) dataschemas are not fetched)'
        """
        if self.dataschema is None:
            return "data"
        if self.unread is None:
            return f"dataschema {self.dataschema}"
        return f"data (dataschema {self.dataschema} not read: {self.unread})"


def save_columns(path: Location, columns: dict[str, TypeColumns]) -> None:
    """Keep ``columns`` (per type, as :func:`type_columns` gives them) at ``path``,
    replacing what was there, in one step: the fields under ``types`` as ever, and each
    type's dataschema (and why it was not read) under ``dataschemas``, a key older
    readers ignore.

    Example:
        >>> save_columns(fields_path(settings.warehouse), type_columns(spark, events, ...))
    """
    document = {
        "inferred_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "types": {name: c.fields for name, c in columns.items()},
        "dataschemas": {
            name: {"uri": c.dataschema, "unread": c.unread}
            for name, c in columns.items()
            if c.dataschema is not None
        },
    }
    write_text(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def save_fields(path: Location, fields: dict[str, dict[str, str]]) -> None:
    """Keep ``fields`` (per type, field -> Spark type, as :func:`inferred_fields` gives
    them) at ``path``, as :func:`save_columns` does, with no dataschema.

    Example:
        >>> save_fields(fields_path(settings.warehouse), inferred_fields(spark, events, ...))
    """
    save_columns(path, {name: TypeColumns(f) for name, f in fields.items()})


def _as_dict(value: object) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def load_columns(path: Location) -> dict[str, TypeColumns]:
    """The columns kept at ``path`` by :func:`save_columns` (or by :func:`save_fields`,
    also of an older eventlake: no dataschemas); none when there is no such file or it
    is not one of ours (they are then inferred again).

    Example:
        >>> load_columns(fields_path(settings.warehouse))["com.example.order.paid"].source()
        'dataschema file:///schemas/order-paid.json'
    """
    try:
        text = read_text(path)
        document = json.loads(text) if text is not None else {}
        types = document["types"]
    except (OSError, ValueError, TypeError, KeyError):
        return {}
    if not isinstance(types, dict):
        return {}
    sources = _as_dict(document.get("dataschemas"))
    columns: dict[str, TypeColumns] = {}
    for name, fields in types.items():
        if not isinstance(fields, dict):
            continue
        source = _as_dict(sources.get(name))
        columns[name] = TypeColumns(
            {str(k): str(v) for k, v in fields.items()},
            _optional_text(source.get("uri")),
            _optional_text(source.get("unread")),
        )
    return columns


def load_fields(path: Location) -> dict[str, dict[str, str]]:
    """The fields kept at ``path`` (:func:`load_columns`), per type.

    Example:
        >>> load_fields(fields_path(settings.warehouse))
        {'com.example.order.paid': {'amount': 'DECIMAL(38,2)', 'order': 'STRING'}}
    """
    return {name: c.fields for name, c in load_columns(path).items()}
