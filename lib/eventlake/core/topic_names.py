"""Which names Kafka accepts for a topic: one rule for the CLI, the settings, the DAGs'
forms and the state tables' folders. No Kafka client here: the settings check names too.

Example:
    >>> is_topic_name("demo.orders"), is_topic_name("bad topic!")
    (True, False)
"""

from __future__ import annotations

import re
from typing import Any, Final

from eventlake.core.errors import Refused

#: Kafka's legal topic names, as a JSON-schema/Java pattern (``.`` and ``..`` excepted:
#: see :func:`topic_name_schema` for the whole rule as JSON schema).
TOPIC_NAME_PATTERN: Final = r"^[A-Za-z0-9._-]{1,249}$"
_TOPIC_NAME: Final = re.compile(TOPIC_NAME_PATTERN)
_RESERVED_TOPIC_NAMES: Final = frozenset({".", ".."})


class InvalidTopicNameError(Refused, ValueError):
    """Not a name Kafka accepts for a topic; the message says what is allowed."""


def is_topic_name(name: str) -> bool:
    """Whether Kafka accepts ``name`` as a topic name (names are path-safe, too).

    Example:
        >>> is_topic_name("demo.orders"), is_topic_name("bad topic!"), is_topic_name("..")
        (True, False, False)
    """
    return _TOPIC_NAME.fullmatch(name) is not None and name not in _RESERVED_TOPIC_NAMES


def check_topic_name(name: str, what: str = "Kafka topic name") -> str:
    """Return ``name`` when it is a legal Kafka topic name, else raise saying why.

    Example:
        >>> check_topic_name("bad topic!", "--source")
        Traceback (most recent call last):
        ...
        eventlake.core.topic_names.InvalidTopicNameError: Invalid --source 'bad topic!': use 1-249
        ...
    """
    if not is_topic_name(name):
        raise InvalidTopicNameError(
            f"Invalid {what} {name!r}: use 1-249 characters of letters, digits, '.', '_' "
            "and '-' (not '.' or '..')."
        )
    return name


def topic_name_schema(*, nullable: bool = False) -> dict[str, Any]:
    """A legal topic name as JSON schema, for the DAGs' forms (Airflow checks a run's
    params against it before the run starts); ``nullable``: null too (no topic).

    Example:
        >>> topic_name_schema()["not"]
        {'enum': ['.', '..']}
        >>> topic_name_schema(nullable=True)["type"]
        ['null', 'string']
    """
    return {
        "type": ["null", "string"] if nullable else "string",
        "pattern": TOPIC_NAME_PATTERN,
        "not": {"enum": sorted(_RESERVED_TOPIC_NAMES)},
    }
