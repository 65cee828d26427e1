"""What Spark logged for a micro-batch before running it: the Kafka offsets it reads up to,
and when.

Spark writes each batch's end offsets to ``<checkpoint>/offsets/<batch id>`` before the
batch runs (its write-ahead log), in a format of its own: a format line ("v1"), the batch's
metadata (``batchTimestampMs``) as JSON, then one JSON line per source. eventlake's
streams have one source, Kafka: ``{"topic": {"partition": offset}}``. The ledger
records these end offsets as the batch's marks. This module is the one reader of that
format, and refuses a format it was not checked with.

Example:
    >>> logged_batch(checkpoint / "spark", 7)
    LoggedBatch(ends={('orders', 0): 1300}, logged_at_ms=1764050000000)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from eventlake.core.errors import EventlakeError
from eventlake.core.locations import Location
from eventlake.ledger.marks import PartitionOffsets
from eventlake.storage.store import names, read_text

#: Formats of Spark's offset log this reader was checked with (Spark 4.1).
CHECKED_OFFSET_LOG_FORMATS: Final = frozenset({"v1"})


class OffsetLogError(EventlakeError, RuntimeError):
    """Spark's offset log is not in a format this reader knows."""


@dataclass(frozen=True)
class LoggedBatch:
    """A micro-batch's end offset per (topic, partition) and when Spark logged it."""

    ends: PartitionOffsets
    logged_at_ms: int


def logged_batch(spark_folder: Location, batch_id: int) -> LoggedBatch:
    """The end offsets and planning time of batch ``batch_id`` of the stream whose Spark
    checkpoint is ``spark_folder``.

    Example:
        >>> logged_batch(Path("/wh/_checkpoints/ingest-topics_orders/spark"), 0).ends
        {('orders', 0): 1200, ('orders', 1): 1187}
    """
    path = spark_folder / "offsets" / str(batch_id)
    text = read_text(path)
    if text is None:
        raise FileNotFoundError(f"{path}: no such batch in Spark's offset log")
    lines = text.splitlines()
    if not lines or lines[0] not in CHECKED_OFFSET_LOG_FORMATS:
        raise OffsetLogError(
            f"{path}: Spark's offset log format {lines[0] if lines else '(empty)'!r} is not "
            f"one eventlake reads ({sorted(CHECKED_OFFSET_LOG_FORMATS)}); check "
            "eventlake.runs.offset_log against this Spark version."
        )
    metadata = json.loads(lines[1]) if len(lines) > 1 else {}
    source = lines[2] if len(lines) > 2 else "-"
    offsets = json.loads(source) if source.startswith("{") else {}
    ends = {
        (topic, int(partition)): int(offset)
        for topic, partitions in offsets.items()
        for partition, offset in partitions.items()
    }
    return LoggedBatch(ends, int(metadata.get("batchTimestampMs", 0)))


def last_committed_batch(spark_folder: Location) -> int | None:
    """The id of the stream's last batch Spark marked as done (None: none yet).

    Example:
        >>> last_committed_batch(Path("/wh/_checkpoints/ingest-topics_orders/spark"))
        6
    """
    ids = [int(name) for name in names(spark_folder / "commits") if name.isdigit()]
    return max(ids, default=None)
