"""Whether an ingest has anything to land, found without Spark: the ledger's marks (read
from the events table's log with delta-rs) against the topics' end offsets (Kafka's
admin API). A scheduled run of a quiet topic then ends in about a second, where
starting Spark and its stream to find nothing took ~6.5 s and a JVM.

Only for what the check can answer for: named topics (a pattern's topics are known to
Spark's subscription alone), an available-now run without ending offsets, and no state
table kept (a state run also checks the compaction risk of its tables), and no
OpenLineage configured (a run reports its lineage, even of nothing). Anything it
cannot tell (no broker, a missing topic, a partition without a mark) is left to the
run, which says what is wrong.

Example:
    >>> nothing_to_land(settings, IngestRequest(topics=("orders",)))
    True
"""

from __future__ import annotations

from eventlake.ingest.request import IngestRequest
from eventlake.ledger import INGEST, read_marks
from eventlake.lineage import lineage_configured
from eventlake.settings import Settings
from eventlake.streaming import AVAILABLE_NOW
from eventlake.tables import EVENTS


def nothing_to_land(settings: Settings, request: IngestRequest) -> bool:
    """True when every partition of the request's topics is landed up to its end: the
    events marks equal the end offsets, or the partition holds no record at all.

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
    from confluent_kafka import KafkaException

    from eventlake.compaction import topic_offsets
    from eventlake.kafka import missing_topics

    _, marks = read_marks(settings.table_path(EVENTS), INGEST, request.topics)
    try:
        if missing_topics(settings, request.topics, timeout=5.0):
            return False
        for topic in request.topics:
            starts, ends = topic_offsets(settings, topic, timeout=5.0)
            for partition, end in ends.items():
                landed = marks.get((topic, partition))
                empty = starts.get(partition) == end
                if landed != end and not (landed is None and empty):
                    return False
    except KafkaException:
        return False  # the run reports what is wrong with Kafka
    return True
