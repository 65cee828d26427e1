"""Kafka plumbing: confluent-kafka clients and Spark Kafka source options from settings.

Python producers use the murmur2 partitioner so that a key lands on the same
partition as with the Java client (librdkafka's default hashes with CRC32).

Example:
    >>> from eventlake.settings import load_settings
    >>> producer = make_producer(load_settings())
    >>> create_topic(load_settings(), "orders", partitions=3, config={"cleanup.policy": "compact"})
"""

from __future__ import annotations

import difflib
import logging
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from pyspark.sql import DataFrame, SparkSession

from eventlake.errors import TryAgainLater
from eventlake.settings import Settings
from eventlake.spark import session_conf

#: Where librdkafka's own log lines go: Python's logging, served when a client polls
#: (an admin client never does), not raw ``%3|...|FAIL|...`` lines on the terminal of a
#: command that already says in a sentence what went wrong (``eventlake status`` with
#: the broker down printed one per reconnect).
CLIENT_LOG: Final = logging.getLogger("eventlake.kafka.client")


def client_options(settings: Settings, **options: Any) -> dict[str, Any]:
    """librdkafka options for a confluent-kafka client: the settings' (credentials
    included), the client's log lines into :data:`CLIENT_LOG`, then ``options``.

    Example:
        >>> client_options(load_settings(), **{"group.id": "g"})["group.id"]
        'g'
    """
    return settings.kafka_client_options() | {"logger": CLIENT_LOG} | options


#: librdkafka's name for the Java client's default partitioner (murmur2, random if no key).
JAVA_COMPATIBLE_PARTITIONER = "murmur2_random"


def make_producer(settings: Settings, **options: Any) -> Producer:
    """A confluent-kafka producer that partitions keys like the Java client."""
    java_like = {"partitioner": JAVA_COMPATIBLE_PARTITIONER, "linger.ms": 20}
    return Producer(client_options(settings) | java_like | options)


Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]


class DeliveryError(RuntimeError):
    """The broker refused records; the message names the first error."""


def produce_all(
    settings: Settings, topic: str, records: Iterable[Record], timeout: float = 60.0
) -> int:
    """Produce (key, value, headers) records and wait for every delivery report.

    ``flush`` alone only says the queue drained; a refused record (e.g. a keyless
    record on a compacted topic) shows up only in its delivery report.

    Example:
        >>> produce_all(settings, "orders", [(b"k", b"v", [("ce_id", b"1")])])
        1
    """
    producer = make_producer(settings)
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            errors.append(str(error))

    count = 0
    for key, value, headers in records:
        typed_headers: list[tuple[str, str | bytes | None]] = list(headers)
        producer.produce(
            topic, key=key, value=value, headers=typed_headers, on_delivery=on_delivery
        )
        producer.poll(0)
        count += 1
    if producer.flush(timeout):
        raise DeliveryError(f"records to {topic} still queued after {timeout}s")
    if errors:
        raise DeliveryError(f"{len(errors)} of {count} records to {topic} failed: {errors[0]}")
    return count


class KafkaConnectionError(TryAgainLater, RuntimeError):
    """The cluster cannot be reached or refuses our credentials; says what to check."""


#: After this long without an answer, :func:`check_connection` says it is waiting.
WAITING_SAID_AFTER_SECONDS: Final = 2.0


def check_connection(settings: Settings, timeout: float = 15.0) -> None:
    """Fail fast with a clear message when the cluster is unreachable or the credentials
    are wrong, rather than letting a Spark job retry until it times out.

    Example:
        >>> check_connection(settings)  # returns quietly when the cluster answers
    """
    from confluent_kafka import KafkaException

    errors: list[str] = []
    config = client_options(settings)
    config["error_cb"] = lambda error: errors.append(str(error))
    config["log_level"] = 0  # this probe reports what went wrong itself
    admin = AdminClient(config)
    failure: str | None = None
    started = time.monotonic()
    said_waiting = False
    while True:
        try:
            admin.list_topics(timeout=1.0)
            failure = None
            break
        except KafkaException as error:
            failure = str(error)
        admin.poll(0)  # serves error_cb, which carries authentication failures
        waited = time.monotonic() - started
        if any("AUTHENTICATION" in e.upper() for e in errors) or waited > timeout:
            break
        if not said_waiting and waited > WAITING_SAID_AFTER_SECONDS:
            # A broker that restarts answers again within seconds: worth the wait, said once.
            print(
                f"Kafka at {settings.bootstrap_servers} does not answer yet; waiting up to "
                f"{timeout:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            said_waiting = True
    auth = [e for e in [*errors, failure or ""] if "AUTHENTICATION" in e.upper()]
    if auth:
        user = settings.kafka_options.get("sasl.username", "?")
        raise KafkaConnectionError(
            f"Kafka at {settings.bootstrap_servers} refused the credentials of user {user!r} "
            f"({auth[0]}). Check EVENTLAKE_KAFKA_OPTIONS (sasl.mechanism, sasl.username) and "
            "EVENTLAKE_KAFKA_PASSWORD."
        )
    if failure is not None:
        detail = errors[0] if errors else failure
        raise KafkaConnectionError(
            f"Kafka at {settings.bootstrap_servers} did not answer within {timeout:.0f}s "
            f"({detail}). Is the broker running (`eventlake broker status`) and is "
            "EVENTLAKE_BOOTSTRAP_SERVERS right?"
        )


class UnknownTopicError(RuntimeError):
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


class TopicPatternError(ValueError):
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


def require_topic_pattern(spark: SparkSession, pattern: str) -> None:
    """Refuse a ``--topic-pattern`` that Spark's Kafka source cannot subscribe with, in
    one sentence: it compiles the pattern with Java's regular expressions, whose syntax
    differs from Python's, so the pattern is compiled by the session's own JVM (a public
    JDK call) before the stream starts, where the same error would end the query with
    a Java stack trace.

    Example:
        >>> require_topic_pattern(spark, "orders-[")
        Traceback (most recent call last):
        TopicPatternError: --topic-pattern 'orders-[' is not a Java regular expression ...
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import IllegalArgumentException

    try:
        spark._jvm.java.util.regex.Pattern.compile(pattern)  # type: ignore[union-attr]
    except (IllegalArgumentException, Py4JJavaError) as error:
        # PySpark converts Java's PatternSyntaxException (an IllegalArgumentException); its
        # message's first line says what is wrong and where, the pattern is echoed below.
        text = error.java_exception.getMessage() if isinstance(error, Py4JJavaError) else error
        why = (str(text).strip().splitlines() or ["refused by Java"])[0]
        raise TopicPatternError(
            f"--topic-pattern {pattern!r} is not a Java regular expression ({why}); "
            "Spark's Kafka source matches whole topic names with Java's syntax, "
            "e.g. 'orders\\..*' for every topic starting with 'orders.'"
        ) from None


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


#: Texts of Java client and Spark errors that mean Kafka did not answer in time.
_CONNECTION_FAILURES: Final = (
    "org.apache.kafka.common.errors.TimeoutException",
    "org.apache.kafka.common.errors.DisconnectException",
    "org.apache.kafka.common.errors.NetworkException",
    "Timed out waiting for a node assignment",
    "Cannot fetch record for offset",
    "Failed to get records for",
)


def connection_lost_error(
    settings: Settings, error: BaseException, *, resume: str
) -> KafkaConnectionError | None:
    """Explain a run that failed while Kafka was unreachable, instead of a stack trace.

    After a failed run, probe the cluster: when it does not answer (or refuses the
    credentials), or the failure came from a Kafka timeout, return an error that says
    so, what to check, and ``resume`` (how a rerun picks up). Otherwise None: the
    failure had another cause.

    Example:
        >>> raise connection_lost_error(settings, error, resume="Rerun the command.") from error
    """
    lines = str(error).splitlines()
    cause = next(
        (line.strip()[:300] for line in lines if any(m in line for m in _CONNECTION_FAILURES)),
        None,
    )
    try:
        check_connection(settings, timeout=10.0)
    except KafkaConnectionError as probe:
        return KafkaConnectionError(
            f"The run stopped because Kafka became unreachable: {probe} {resume}"
        )
    if cause is None:
        return None
    return KafkaConnectionError(
        f"The run stopped because it lost the connection to Kafka at "
        f"{settings.bootstrap_servers} ({cause}); the cluster answers again now, so it "
        f"was restarted or the network was down. {resume}"
    )


def make_admin(settings: Settings) -> AdminClient:
    """An admin client on the configured cluster."""
    return AdminClient(client_options(settings))


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
    except Exception as error:  # the future raises KafkaException wrapping a KafkaError
        if "TOPIC_ALREADY_EXISTS" in str(error):
            return False
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


def spark_kafka_options(settings: Settings) -> dict[str, str]:
    """Options for Spark's Kafka source and sink (Java client names, ``kafka.`` prefix).

    The security options in ``settings.kafka_options`` share their names between
    librdkafka and the Java client, except the SASL credentials, which the Java client
    takes as a JAAS line.
    """
    options = {"kafka.bootstrap.servers": settings.bootstrap_servers}
    for key, value in settings.kafka_options.items():
        if key in {"sasl.username", "sasl.password"}:
            continue
        options[f"kafka.{key}"] = value
    username = settings.kafka_options.get("sasl.username")
    if username is not None and settings.kafka_password is not None:
        module = "org.apache.kafka.common.security.scram.ScramLoginModule"
        if settings.kafka_options.get("sasl.mechanism", "").upper() == "PLAIN":
            module = "org.apache.kafka.common.security.plain.PlainLoginModule"
        password = settings.kafka_password.get_secret_value()
        options["kafka.sasl.jaas.config"] = (
            f"{module} required username={jaas_quoted(username)} password={jaas_quoted(password)};"
        )
    return options


def jaas_quoted(value: str) -> str:
    """``value`` as a quoted JAAS option value: Kafka's JAAS parser (a
    ``java.io.StreamTokenizer``) reads backslash escapes inside double quotes, and a line
    break would end the value, so backslashes, quotes and line breaks are escaped; a
    value cannot add options of its own.

    Example:
        >>> jaas_quoted('p"w\\')
        '"p\\"w\\\\"'
    """
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


def kafka_source_options(
    settings: Settings,
    subscription: dict[str, str],
    *,
    starting_offsets: str,
    ending_offsets: str | None = None,
) -> dict[str, str]:
    """Options of Spark's Kafka source for eventlake's jobs: headers included, data loss
    an error, and ``settings.max_offsets_per_trigger`` for streaming runs.

    ``subscription`` is the source's ``subscribe`` or ``subscribePattern`` option.

    Example:
        >>> kafka_source_options(settings, {"subscribe": "orders"}, starting_offsets="earliest")
        {'kafka.bootstrap.servers': '127.0.0.1:9092', 'subscribe': 'orders', ...}
    """
    options = spark_kafka_options(settings)
    options.update(subscription)
    options.update(
        {
            "includeHeaders": "true",
            "startingOffsets": starting_offsets,
            # Gaps from compaction and transaction markers are skipped by the source;
            # offsets gone below the log start are real loss and must stop the run.
            "failOnDataLoss": "true",
            # A read that reaches the end of a partition otherwise waits 500 ms there.
            "kafka.fetch.max.wait.ms": str(settings.kafka_fetch_wait_ms),
        }
    )
    if ending_offsets is not None:
        options["endingOffsets"] = ending_offsets
    elif settings.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(settings.max_offsets_per_trigger)
    return options


def producer_options(settings: Settings) -> dict[str, str]:
    """Options of Spark's Kafka sink: :func:`spark_kafka_options` plus the producer's
    batching (``settings.kafka_producer_batch_bytes`` and ``kafka_producer_linger_ms``),
    unless ``settings.kafka_options`` sets ``batch.size`` or ``linger.ms`` itself.

    A Spark task flushes its producer when it ends, so lingering delays no micro-batch's
    end; it lets a task that builds records slower than the producer sends them (the
    encoder's work) fill its batches instead of sending a few records per request.

    Example:
        >>> producer_options(load_settings())["kafka.batch.size"]
        '262144'
    """
    options = {
        "kafka.batch.size": str(settings.kafka_producer_batch_bytes),
        "kafka.linger.ms": str(settings.kafka_producer_linger_ms),
    }
    options.update(spark_kafka_options(settings))
    return options


#: Spark's default list of sources that DataFrameWriter sends through the V1 API.
_V1_SOURCES_KEY: Final = "spark.sql.sources.useV1SourceList"


def write_to_kafka(frame: DataFrame, settings: Settings, topic: str) -> None:
    """Write Spark Kafka sink rows (key, value, headers) to ``topic``, as one Spark job.

    Through the sink's DataSource V2 writer: the V1 path (Spark's default for Kafka) runs
    the query out of sight of ``Dataset.observe``, whose counts callers rely on.

    Example:
        >>> write_to_kafka(rows.select("key", "value", "headers"), settings, "orders.keyed")
    """
    spark = frame.sparkSession
    # A Spark internal (eventlake.engine_versions lists it with its test).
    v1_sources = spark.conf.get(_V1_SOURCES_KEY) or ""
    without_kafka = ",".join(s for s in v1_sources.split(",") if s.strip().lower() != "kafka")
    with session_conf(spark, {_V1_SOURCES_KEY: without_kafka}):
        (
            frame.write.mode("append")
            .format("kafka")
            .options(**producer_options(settings))
            .option("topic", topic)
            .save()
        )
