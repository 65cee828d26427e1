"""The offsets a run reads: where it starts (the ledger's marks, else what was asked),
where a bounded run ends, and Spark's JSON for both.

Example:
    >>> starts, ends = bounded_range(settings, {("orders", 0): 1200}, "earliest", "latest",
    ...                              {"orders": 1})
    >>> starts, ends
    ({('orders', 0): 1200}, {('orders', 0): 1500})
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession

from eventlake.core.offset_specs import EARLIEST, LATEST
from eventlake.core.settings import Settings
from eventlake.ledger.marks import Marks, PartitionOffsets


def requested_starts(spec: str, partitions: Mapping[str, int]) -> Marks:
    """``--starting-offsets`` ('earliest', 'latest' or per-partition JSON) as Spark's
    per-partition numbers (-2 earliest, -1 latest), for every partition.

    Example:
        >>> requested_starts("earliest", {"a": 2})
        {('a', 0): -2, ('a', 1): -2}
    """
    if spec in ("earliest", "latest"):
        default = EARLIEST if spec == "earliest" else LATEST
        return {(t, p): default for t, count in partitions.items() for p in range(count)}
    given = json.loads(spec)
    return {
        (t, p): int(given.get(t, {}).get(str(p), EARLIEST))
        for t, count in partitions.items()
        for p in range(count)
    }


def starting_offsets_json(
    marks: Marks, partitions: Mapping[str, int], requested: PartitionOffsets
) -> str:
    """Spark's ``startingOffsets`` for ``partitions`` (topic -> count): the mark where
    there is one, else the ``requested`` offset (-2: earliest, -1: latest). Spark wants
    every partition named.

    Example:
        >>> starting_offsets_json({("a", 0): 12}, {"a": 2}, {("a", 0): -2, ("a", 1): -2})
        '{"a": {"0": 12, "1": -2}}'
    """
    return offsets_json(
        {
            (t, p): marks.get((t, p), requested.get((t, p), EARLIEST))
            for t, count in partitions.items()
            for p in range(count)
        }
    )


def bounded_range(
    settings: Settings,
    landed: Marks,
    starting: str,
    ending: str,
    partitions: Mapping[str, int],
) -> tuple[PartitionOffsets, PartitionOffsets]:
    """(starts, ends) of a bounded run: from ``landed`` (the ledger's marks; where none,
    ``starting``) up to ``ending`` ('latest' or per-partition JSON, -1: latest), resolved
    to offsets with Kafka's log start and end; a start is never past its end.

    Example:
        >>> bounded_range(settings, {}, "earliest", '{"a": {"0": 10}}', {"a": 1})
        ({('a', 0): 0}, {('a', 0): 10})
    """
    from eventlake.kafka.topics import topic_offsets

    given = {} if ending == "latest" else json.loads(ending)
    requested = requested_starts(starting, partitions)
    starts: PartitionOffsets = {}
    ends: PartitionOffsets = {}
    for topic, count in partitions.items():
        log_start, head = topic_offsets(settings, topic)
        for partition in range(count):
            key = (topic, partition)
            wanted = int(given.get(topic, {}).get(str(partition), LATEST)) if given else LATEST
            end = head[partition] if wanted < 0 else min(wanted, head[partition])
            start = landed.get(key, requested[key])
            if start == EARLIEST:
                start = log_start.get(partition, 0)
            elif start == LATEST:
                start = end
            starts[key], ends[key] = min(start, end), end
    return starts, ends


def nothing_to_read(starts: PartitionOffsets, ends: PartitionOffsets) -> bool:
    """Whether a bounded range is empty in every partition.

    Example:
        >>> nothing_to_read({("a", 0): 5}, {("a", 0): 5})
        True
    """
    return all(starts[key] >= end for key, end in ends.items())


def split_range(
    starts: PartitionOffsets, ends: PartitionOffsets, at_most: int
) -> list[tuple[PartitionOffsets, PartitionOffsets]]:
    """A bounded range cut into consecutive pieces of about ``at_most`` offsets in all
    (rounding may add one per partition), each partition advanced in proportion to its
    share, so that every piece reads every partition; the last piece ends at ``ends``.

    Example:
        >>> split_range({("a", 0): 0, ("a", 1): 10}, {("a", 0): 4, ("a", 1): 12}, 3)
        [({('a', 0): 0, ('a', 1): 10}, {('a', 0): 2, ('a', 1): 11}),
         ({('a', 0): 2, ('a', 1): 11}, {('a', 0): 4, ('a', 1): 12})]
    """
    if at_most < 1:
        raise ValueError(f"at_most must be at least 1, not {at_most}")
    # bounded_range never puts a start past its end.
    total = sum(end - starts[key] for key, end in ends.items())
    pieces = max(-(-total // at_most), 1)
    cuts = [
        {key: starts[key] + (end - starts[key]) * i // pieces for key, end in ends.items()}
        for i in range(pieces + 1)
    ]
    return [(cuts[i], cuts[i + 1]) for i in range(pieces)]


def read_range(
    spark: SparkSession,
    options: Mapping[str, str],
    starts: PartitionOffsets,
    ends: PartitionOffsets,
) -> DataFrame:
    """The records of Spark's Kafka source (``options``) from ``starts`` to ``ends``.

    Example:
        >>> read_range(spark, kafka_reader_options(settings, request), starts, ends).count()
        300
    """
    return (
        spark.read.format("kafka")
        .options(**options)
        .option("startingOffsets", offsets_json(starts))
        .option("endingOffsets", offsets_json(ends))
        .load()
    )


def offsets_json(offsets: PartitionOffsets) -> str:
    """Spark's ``startingOffsets``/``endingOffsets`` JSON of per-partition offsets.

    Example:
        >>> offsets_json({("a", 0): 12, ("a", 1): -2})
        '{"a": {"0": 12, "1": -2}}'
    """
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(nested)
