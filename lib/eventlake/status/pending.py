"""Whether an ingest or a republish has anything to do, found without Spark: the
ledger's marks (read from the table's log with delta-rs) against the source topics' end
offsets (Kafka's admin API). A scheduled run on a quiet topic then ends in about a
second, where starting Spark and its stream to find nothing took 6.5-9 s and a JVM.

Only for what the check can answer for: named topics (a pattern's topics are known to
Spark's subscription alone), an available-now run without ending offsets, no
OpenLineage configured (a run reports its lineage, even of nothing), and for ingest no
state table kept (a state run also checks the compaction risk of its tables), for
republish a target that exists. Anything it cannot tell (no broker, a missing topic, a
partition without a mark) is left to the run, which says what is wrong.

Example:
    >>> nothing_to_land(settings, IngestRequest(topics=("orders",)))
    True
    >>> nothing_to_send(settings, RepublishRequest(source="orders.raw", target="orders"))
    False
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.ingest.request import IngestRequest
from eventlake.ledger.marks import INGEST, Marks, read_marks
from eventlake.republish.request import RepublishRequest
from eventlake.runs.lineage import lineage_configured
from eventlake.runs.triggers import AVAILABLE_NOW
from eventlake.warehouse.names import EVENTS, REJECTS, is_delta_table
from eventlake.warehouse.tables import create_missing_tables

#: Seconds each Kafka request of the check may take: past them, the run decides.
CHECK_TIMEOUT = 2.0


def nothing_to_land(settings: Settings, request: IngestRequest) -> bool:
    """True when ingest's ledger (the events table's marks) holds every record of the
    request's topics up to their ends. Topics that hold no record into a warehouse without
    its tables: True once the check has made them (delta-rs, no Spark), as a run would;
    not with a catalog (the run names them).

    Example:
        >>> nothing_to_land(settings, IngestRequest(topics=("orders",), state=True))
        False
    """
    if (
        not request.topics
        or request.bounded
        or request.trigger != AVAILABLE_NOW
        or request.state
        or set(request.topics) & set(settings.state_topics)
        or lineage_configured()
    ):
        return False
    # A first run of empty topics needs no Spark either: its tables are made here, in
    # milliseconds. With a catalog the run makes them, and names them there.
    make_tables = None if settings.metastore_uri else partial(create_missing_tables, settings)
    return landed_to_the_end(
        settings, settings.table_path(EVENTS), INGEST, request.topics, make_table=make_tables
    )


def nothing_to_send(settings: Settings, request: RepublishRequest) -> bool:
    """True when the route's ledger (its marks in the rejects table) holds every record of
    the source up to its end, and the target exists (a run creates a missing one).

    Example:
        >>> nothing_to_send(settings, RepublishRequest(source="a", target="b"))
        True
    """
    from eventlake.republish.run import republish_job

    if request.bounded or request.trigger != AVAILABLE_NOW or lineage_configured():
        return False
    return landed_to_the_end(
        settings,
        settings.table_path(REJECTS),
        republish_job(request.target),
        [request.source],
        also_existing=[request.target],
    )


def landed_to_the_end(
    settings: Settings,
    table: Location,
    job: str,
    topics: Sequence[str],
    *,
    also_existing: Sequence[str] = (),
    make_table: Callable[[], object] | None = None,
) -> bool:
    """True when the Delta table ``table`` exists and ``job``'s marks in it equal every
    partition's end offset of ``topics`` (a partition that holds no record needs none),
    and the topics and ``also_existing`` exist; False when Kafka does not answer in time.
    Without the table: False, unless ``make_table`` is given and the topics hold no
    record; then True once ``make_table()`` has made it.

    Example:
        >>> landed_to_the_end(settings, settings.table_path(EVENTS), INGEST, ["orders"])
        True
    """
    exists = is_delta_table(table)
    if not exists and make_table is None:
        return False  # a first run creates the tables, even of an empty topic
    marks = read_marks(table, job, topics)[1] if exists else {}
    if not _every_record_marked(settings, marks, topics, also_existing):
        return False
    if not exists:
        assert make_table is not None
        make_table()
        return is_delta_table(table)
    return True


def _every_record_marked(
    settings: Settings, marks: Marks, topics: Sequence[str], also_existing: Sequence[str]
) -> bool:
    """Whether ``marks`` reach every partition's end of ``topics`` (an empty partition
    needs none) and the topics and ``also_existing`` exist, asked of Kafka."""
    from confluent_kafka import KafkaException

    from eventlake.kafka.topics import missing_topics, topic_offsets

    try:
        if missing_topics(settings, [*topics, *also_existing], timeout=CHECK_TIMEOUT):
            return False
        for topic in topics:
            starts, ends = topic_offsets(settings, topic, timeout=CHECK_TIMEOUT)
            for partition, end in ends.items():
                landed = marks.get((topic, partition))
                empty = starts.get(partition) == end
                if landed != end and not (landed is None and empty):
                    return False
    except KafkaException:
        return False  # the run says what is wrong with Kafka
    return True
