"""Kafka through Spark: a subscribe pattern checked against the broker, and a
DataFrame written to a topic by Spark's Kafka sink.

Example:
    >>> write_to_kafka(frame, settings, "demo.orders.by-entity")
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from eventlake.core.settings import Settings
from eventlake.kafka.clients import _V1_SOURCES_KEY
from eventlake.kafka.connector_options import producer_options
from eventlake.kafka.topics import TopicPatternError
from eventlake.spark.session import session_conf


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


def write_to_kafka(frame: DataFrame, settings: Settings, topic: str) -> None:
    """Write Spark Kafka sink rows (key, value, headers) to ``topic``, as one Spark job.

    Through the sink's DataSource V2 writer: the V1 path (Spark's default for Kafka) runs
    the query out of sight of ``Dataset.observe``, whose counts callers rely on.

    Example:
        >>> write_to_kafka(rows.select("key", "value", "headers"), settings, "orders.keyed")
    """
    spark = frame.sparkSession
    # A Spark internal (eventlake.core.engine_internals lists it with its test).
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
