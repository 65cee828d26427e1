"""The options of Spark's Kafka connector (source and sink) from the settings: plain
strings, no pyspark. SASL credentials go inside ``sasl.jaas.config``, which Spark's
redaction hides.

Example:
    >>> kafka_source_options(settings, topics=("demo.orders",))["subscribe"]
    'demo.orders'
"""

from __future__ import annotations

from eventlake.core.settings import Settings


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
