"""Counting a batch by reason in the same pass that writes it.

Writing a decoded batch is one Spark job. Counting it in a job of its own read and
decoded the batch once more, or needed it held in a cache first (building that cache
was a third of a large batch's time). Spark's ``Dataset.observe`` computes aggregates
while the rows stream through the write, and the driver gets them when the write ends.

An observation also keeps a decoder from running twice: Spark pushes a filter on a
decoded field (``reject_reason IS NULL``) below the projection that decodes, copying
the decoder into the filter, but it pushes no filter through an observation.

Example:
    >>> seen = Observation()
    >>> counted = observe_reasons(decoded, seen, "reject_reason", ["malformed_json"])
    >>> counted.where("reject_reason IS NULL").write.format("delta").save(path)
    >>> reason_counts(seen, ["malformed_json"])
    {None: 998, 'malformed_json': 2}
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any, Final

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from eventlake.core.errors import EventlakeError
from eventlake.spark.columns import built_once

_RECORDS = "records"
_VALID = "valid"
#: Prefix of a flag's count among the observed metrics (never a reason code).
_FLAG = "flag:"
#: How long the counts may take to reach the driver once the action has returned.
_ARRIVAL_SECONDS: Final = 30.0


class CountMismatchError(EventlakeError, RuntimeError):
    """The reasons counted do not add up to the rows: a reason is missing from the list."""


class ObservationMissingError(EventlakeError, RuntimeError):
    """No action filled the observation: it did not run, or ran out of Spark's sight."""


def observe_reasons(
    frame: DataFrame,
    observation: Observation,
    column: str,
    reasons: Iterable[str],
    flags: Iterable[str] = (),
) -> DataFrame:
    """``frame`` unchanged, counting its rows per value of ``column`` (null: valid) into
    ``observation`` during the first action that runs over it; and, per boolean column
    in ``flags``, the rows where it is true (read with :func:`flag_counts`).

    Example:
        >>> observe_reasons(planned, seen, "republish_reason", ["missing_key_attribute"])
    """
    codes = tuple(dict.fromkeys(reasons))
    named = tuple(dict.fromkeys(flags))

    def counts() -> list[Column]:
        reason = F.col(column)
        return [
            F.count(F.lit(1)).alias(_RECORDS),
            F.count_if(reason.isNull()).alias(_VALID),
            *[F.count_if(reason == code).alias(code) for code in codes],
            *[F.count_if(F.col(flag)).alias(_FLAG + flag) for flag in named],
        ]

    return frame.observe(observation, *built_once(("counts", column, codes, named), counts))


def flag_counts(observation: Observation, flags: Iterable[str]) -> dict[str, int]:
    """Per flag given to :func:`observe_reasons`, the rows where it was true; flags with
    no rows are left out. Waits for the action to finish.

    Example:
        >>> flag_counts(seen, ["data_json_invalid"])
        {'data_json_invalid': 2}
    """
    row = observed_values(observation)
    return {flag: int(row[_FLAG + flag]) for flag in flags if row.get(_FLAG + flag)}


def optimizer_barrier(frame: DataFrame) -> DataFrame:
    """``frame`` unchanged, behind a node that Spark pushes no filter through (a named
    observation nobody reads), so that an expensive projection runs once per row."""
    # A Spark internal (eventlake.core.engine_internals lists it with its test).
    (count,) = built_once(("barrier",), lambda: [F.count(F.lit(1)).alias(_RECORDS)])
    return frame.observe(f"barrier-{uuid.uuid4().hex}", count)


def reason_counts(observation: Observation, reasons: Iterable[str]) -> dict[str | None, int]:
    """Rows per reason (``None``: valid) seen by an action over :func:`observe_reasons`'s
    frame; reasons with no rows are left out. Waits for that action to finish.

    Example:
        >>> reason_counts(seen, ["malformed_json", "invalid_time"])
        {None: 10, 'malformed_json': 1}
    """
    row = observed_values(observation)
    counts: dict[str | None, int] = {
        code: int(row[code]) for code in dict.fromkeys(reasons) if row.get(code)
    }
    if row.get(_VALID):
        counts[None] = int(row[_VALID])
    if sum(counts.values()) != row.get(_RECORDS, 0):
        raise CountMismatchError(
            f"{row[_RECORDS]} rows but {sum(counts.values())} counted by reason: a reason "
            "code is not in the list given to observe_reasons"
        )
    return counts


def observed_values(observation: Observation) -> dict[str, Any]:
    """The values an action computed into ``observation``, by name; empty when the
    observed frame was known to be empty before it ran (Spark then drops the observing
    node and fills the observation with no values: read a missing count as 0). Waits
    for the action; a clear error when none filled it.

    Example:
        >>> observed_values(seen).get("oldest")
        datetime.datetime(2026, 11, 26, 3, 0)
    """
    # Observation.get waits forever when no job filled it (a write that Delta skipped,
    # or a V1 sink that runs its query out of sight): fail with a message instead.
    # Observation._jo is a Spark internal (eventlake.core.engine_internals lists it).
    java = observation._jo
    deadline = time.monotonic() + _ARRIVAL_SECONDS
    while java is None or not java.future().isCompleted():
        if time.monotonic() > deadline:
            raise ObservationMissingError(
                "no Spark job filled the batch counts: the action over the observed frame "
                "did not run, or ran through a path that observations cannot see"
            )
        time.sleep(0.01)
    # Over an empty local frame the row has no fields, and Observation.get fails on it
    # (PySpark asserts a row with a schema).
    if java.getRow().length() == 0:
        return {}
    return observation.get


def rejects_lost(first: dict[str | None, int], second: dict[str | None, int]) -> str | None:
    """The warning for rejects counted on a batch's first read but not on the second
    read of the same offsets (which writes them); None when both found as many.

    Only Kafka removes records between two reads of fixed offsets: the log cleaner of a
    compacted topic (superseded keys) or retention.

    Example:
        >>> rejects_lost({None: 8, "malformed_json": 2}, {None: 8, "malformed_json": 1})
        '2 rejects on the first read, 1 on the second read of the same offsets (...)'
    """
    rejected, rejected_again = (
        sum(n for reason, n in counts.items() if reason is not None) for counts in (first, second)
    )
    if rejected == rejected_again:
        return None
    return (
        f"{rejected} rejects on the first read, {rejected_again} on the second read of the "
        "same offsets (Kafka removed records in between: compaction or retention); "
        f"{rejected - rejected_again} rejects not stored"
    )
