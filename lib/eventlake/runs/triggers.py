"""A stream's trigger as the jobs and the DAGs take it: ``available-now`` or
``processing-time=<interval>``, checked once. No pyspark.

Example:
    >>> trigger_problem("processing-time=10 seconds") is None
    True
"""

from __future__ import annotations

import re
from typing import Final

AVAILABLE_NOW: Final = "available-now"


PROCESSING_TIME_PREFIX: Final = "processing-time="


def trigger_problem(trigger: str) -> str | None:
    """What is wrong with a ``--trigger`` value, or None when it is valid.

    Example:
        >>> trigger_problem("every minute")
        "Unknown trigger 'every minute': use 'available-now' or ..."
    """
    if trigger == AVAILABLE_NOW:
        return None
    if trigger.startswith(PROCESSING_TIME_PREFIX):
        interval = trigger[len(PROCESSING_TIME_PREFIX) :]
        if _is_interval(interval):
            return None
        return (
            f"Trigger interval {interval!r} is not one Spark reads: numbers, each with a unit "
            f"after a space ({', '.join(_INTERVAL_UNITS)}, or their plurals), e.g. "
            "processing-time=30 seconds or processing-time=1 minute 30 seconds."
        )
    return (
        f"Unknown trigger {trigger!r}: use 'available-now' or "
        "'processing-time=<interval>' (e.g. processing-time=30 seconds)."
    )


#: The units of a Spark interval string (``Trigger.ProcessingTime``), singular.
_INTERVAL_UNITS: Final = (
    "microsecond",
    "millisecond",
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "month",
    "year",
)


def _is_interval(text: str) -> bool:
    # As Spark's interval strings read: an optional "interval", then number-unit pairs
    # ("1 minute 30 seconds", "1.5 seconds"), case-insensitive, a space before each unit.
    words = text.lower().split()
    if words[:1] == ["interval"]:
        words = words[1:]
    if not words or len(words) % 2:
        return False
    return all(
        re.fullmatch(r"[+-]?\d+(\.\d+)?", number) is not None
        and (unit in _INTERVAL_UNITS or unit.removesuffix("s") in _INTERVAL_UNITS)
        for number, unit in zip(words[::2], words[1::2], strict=True)
    )
