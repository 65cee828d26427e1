"""Topics on the broker: which exist (and the sentence for one that does not), their
partitions and offsets, creating and deleting them. confluent-kafka only.

Example:
    >>> require_topics(settings, ["demo.orders"])
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from eventlake.core.errors import Refused
from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_admin


class UnknownTopicError(Refused, RuntimeError):
    """A topic a command names does not exist on the cluster."""


def missing_topics(settings: Settings, topics: Sequence[str], timeout: float = 15.0) -> list[str]:
    """The ``topics`` the cluster does not have, in their order; asks for every topic's
    name, which creates none (see :func:`require_topics`).

    Example:
        >>> missing_topics(settings, ["orders", "custmers"])
        ['custmers']
    """
    if not topics:
        return []
    existing = cluster_topics(settings, timeout)
    return [topic for topic in topics if topic not in existing]


def cluster_topics(settings: Settings, timeout: float = 15.0) -> set[str]:
    """The names of every topic the cluster has (that these credentials may describe).

    Example:
        >>> "orders" in cluster_topics(settings)
        True
    """
    return set(make_admin(settings).list_topics(timeout=timeout).topics)


class TopicPatternError(Refused, ValueError):
    """A ``--topic-pattern`` that Spark's Kafka source cannot compile."""


def require_topics(settings: Settings, topics: Sequence[str], timeout: float = 15.0) -> None:
    """Refuse ``topics`` the cluster does not have, naming them in one sentence: a typo
    gets an error, not an empty run.

    Every topic's name is asked for, not these ones': a metadata request naming a topic
    makes a broker that auto-creates topics (Kafka's default) create it.

    Example:
        >>> require_topics(settings, ["custmers"])
        Traceback (most recent call last):
        UnknownTopicError: Topic 'custmers' does not exist on Kafka at 127.0.0.1:9092 ...
    """
    if not topics:
        return
    existing = cluster_topics(settings, timeout)
    missing = [topic for topic in topics if topic not in existing]
    if missing:
        user = settings.kafka_options.get("sasl.username")
        raise UnknownTopicError(
            unknown_topics_message(missing, settings.bootstrap_servers, user, existing)
        )


def absent_topics(
    settings: Settings, topics: Sequence[str], timeout: float = 15.0
) -> dict[str, str]:
    """Per topic of ``topics`` the cluster does not have, the sentence
    :func:`require_topics` would refuse it with: a run of several lands the others.

    Example:
        >>> absent_topics(settings, ["orders", "custmers"])
        {'custmers': "Topic 'custmers' does not exist on Kafka at 127.0.0.1:9092 ..."}
    """
    existing = cluster_topics(settings, timeout) if topics else set()
    user = settings.kafka_options.get("sasl.username")
    return {
        topic: unknown_topics_message([topic], settings.bootstrap_servers, user, existing)
        for topic in topics
        if topic not in existing
    }


#: How many of the cluster's topics an unknown topic's message names at most.
_TOPICS_NAMED: Final = 8


def unknown_topics_message(
    missing: Sequence[str], servers: str, user: str | None, existing: Iterable[str] = ()
) -> str:
    """What :func:`require_topics` says about ``missing`` topics, given the cluster's
    ``existing`` ones: the names closest to a missing one (a typo), else the topics there
    (Kafka's internal ``__`` topics left out).

    Example:
        >>> unknown_topics_message(["ordrs"], "k:9092", None, ["orders", "payments"])
        "Topic 'ordrs' does not exist on Kafka at k:9092: did you mean 'orders'? ..."
    """
    names = ", ".join(repr(topic) for topic in missing)
    # With ACLs, a topic a user may not describe is left out of the cluster's answer too.
    plural = len(missing) > 1
    hidden = f" (or user {user!r} may not describe {'them' if plural else 'it'})" if user else ""
    return (
        f"Topic{'s' if plural else ''} {names} {'do' if plural else 'does'} not exist on "
        f"Kafka at {servers}{hidden}: {_what_is_there(missing, existing)} Check the name, "
        "or create the topic first."
    )


def _what_is_there(missing: Sequence[str], existing: Iterable[str]) -> str:
    topics = sorted(t for t in existing if not t.startswith("__"))
    close = dict.fromkeys(
        near for topic in missing for near in difflib.get_close_matches(topic, topics, n=3)
    )
    if close:
        return f"did you mean {' or '.join(repr(t) for t in close)}?"
    if not topics:
        return "it has no topics."
    shown = ", ".join(repr(t) for t in topics[:_TOPICS_NAMED])
    more = len(topics) - _TOPICS_NAMED
    return f"its topics are {shown}{f' and {more} more' if more > 0 else ''}."


def log_offsets(
    admin: AdminClient,
    partitions: Mapping[str, Iterable[int]],
    *,
    start: bool = False,
    timeout: float = 30.0,
) -> dict[str, dict[int, int]]:
    """Kafka's end offset (``start``: log start offset) of each of ``partitions`` (topic ->
    partition numbers), asked in one request, however many topics.

    Example:
        >>> admin = make_admin(settings)
        >>> listed = admin.list_topics(timeout=10).topics
        >>> log_offsets(admin, {"orders": listed["orders"].partitions})
        {'orders': {0: 1200, 1: 1180}}
    """
    spec = OffsetSpec.earliest() if start else OffsetSpec.latest()
    request = {
        TopicPartition(topic, partition): spec
        for topic, numbers in partitions.items()
        for partition in numbers
    }
    found: dict[str, dict[int, int]] = {topic: {} for topic in partitions}
    if not request:
        return found
    for tp, future in admin.list_offsets(request, request_timeout=timeout).items():
        found[tp.topic][tp.partition] = future.result(timeout=timeout).offset
    return found


def partition_counts(
    settings: Settings,
    topics: Sequence[str] = (),
    *,
    pattern: str | None = None,
    timeout: float = 30.0,
) -> dict[str, int]:
    """How many partitions each of ``topics`` (or each topic matching ``pattern``, a full
    match, as Spark subscribes) has; topics that do not exist are left out.

    Example:
        >>> partition_counts(settings, ["orders"])
        {'orders': 3}
    """
    listed = make_admin(settings).list_topics(timeout=timeout).topics
    if pattern is not None:
        try:
            compiled = re.compile(pattern)
        except re.error:
            return {}  # Java-only syntax: Spark alone knows which topics it matches
        names = [t for t in listed if not t.startswith("__") and compiled.fullmatch(t)]
    else:
        names = [t for t in topics if t in listed]
    return {name: len(listed[name].partitions) for name in sorted(names)}


def create_topic(
    settings: Settings,
    name: str,
    *,
    partitions: int = 1,
    config: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> bool:
    """Create a topic unless it exists; True when it was created.

    Example:
        >>> create_topic(settings, "customers", partitions=3, config={"cleanup.policy": "compact"})
        True
    """
    admin = make_admin(settings)
    if name in admin.list_topics(timeout=timeout).topics:
        return False
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=timeout,
    )
    try:
        futures[name].result(timeout=timeout)
    except KafkaException as error:  # wrapping a KafkaError
        if error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False  # created meanwhile by another client
        raise
    _wait_for_leaders(admin, name, partitions, timeout)
    return True


def _wait_for_leaders(admin: AdminClient, name: str, partitions: int, timeout: float) -> None:
    """The create call returns before every partition has a leader in the metadata;
    a produce or offset lookup in that window fails with UNKNOWN_TOPIC_OR_PART."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topic = admin.list_topics(name, timeout=timeout).topics.get(name)
        if (
            topic is not None
            and topic.error is None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 and p.error is None for p in topic.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} has no leader for every partition after {timeout}s")


def delete_topics(settings: Settings, names: list[str], timeout: float = 30.0) -> None:
    """Delete topics, ignoring those that do not exist."""
    admin = make_admin(settings)
    existing = set(admin.list_topics(timeout=timeout).topics)
    doomed = [name for name in names if name in existing]
    if not doomed:
        return
    for future in admin.delete_topics(doomed, operation_timeout=timeout).values():
        future.result(timeout=timeout)


def topic_offsets(
    settings: Settings, topic: str, timeout: float = 30.0
) -> tuple[dict[int, int], dict[int, int]]:
    """(log start offsets, end offsets) per partition."""
    admin = make_admin(settings)
    partitions = {topic: admin.list_topics(topic, timeout=timeout).topics[topic].partitions}
    starts = log_offsets(admin, partitions, start=True, timeout=timeout)[topic]
    return starts, log_offsets(admin, partitions, timeout=timeout)[topic]
