"""eventlake.kafka: Kafka source and client options, topics and offsets on a real broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from eventlake.core.settings import Settings, load_settings
from eventlake.kafka.clients import make_admin, make_producer
from eventlake.kafka.connection import KafkaConnectionError, check_connection
from eventlake.kafka.connector_options import kafka_source_options, producer_options
from eventlake.kafka.topics import (
    TopicPatternError,
    UnknownTopicError,
    create_topic,
    log_offsets,
    require_topics,
    unknown_topics_message,
)
from eventlake.local.broker import LocalBroker
from eventlake.spark.kafka import require_topic_pattern

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_a_source_read_waits_at_a_partitions_end_as_long_as_the_settings_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTLAKE_KAFKA_FETCH_WAIT_MS", "35")

    options = kafka_source_options(
        load_settings(), {"subscribe": "orders"}, starting_offsets="earliest"
    )

    assert options["kafka.fetch.max.wait.ms"] == "35"


def test_a_source_read_does_not_wait_kafkas_default_half_second() -> None:
    options = kafka_source_options(
        load_settings(), {"subscribe": "orders"}, starting_offsets="earliest"
    )

    assert int(options["kafka.fetch.max.wait.ms"]) < 500


def test_the_sink_batches_as_the_settings_say(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_KAFKA_PRODUCER_BATCH_BYTES", "65536")
    monkeypatch.setenv("EVENTLAKE_KAFKA_PRODUCER_LINGER_MS", "7")

    options = producer_options(load_settings())

    assert (options["kafka.batch.size"], options["kafka.linger.ms"]) == ("65536", "7")


def test_the_sink_does_not_send_the_java_clients_small_batches() -> None:
    options = producer_options(load_settings())

    assert int(options["kafka.batch.size"]) > 16384
    assert int(options["kafka.linger.ms"]) > 0


def test_batching_set_in_the_kafka_options_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_KAFKA_OPTIONS", '{"batch.size": "32768", "linger.ms": "1"}')

    options = producer_options(load_settings())

    assert (options["kafka.batch.size"], options["kafka.linger.ms"]) == ("32768", "1")


def test_a_jaas_value_cannot_end_its_quotes_or_add_options() -> None:
    from eventlake.kafka.connector_options import jaas_quoted

    crafted = 'x" debug="true'
    assert jaas_quoted(crafted) == '"x\\" debug=\\"true"'
    assert jaas_quoted("a\\b\nc") == '"a\\\\b\\nc"'


def test_a_missing_topic_is_refused_by_name_and_not_created(
    broker: LocalBroker, settings: Settings, topic_name: str
) -> None:
    with pytest.raises(UnknownTopicError, match=f"Topic '{topic_name}' does not exist"):
        require_topics(settings, [topic_name])

    # The broker auto-creates topics: asking for the name alone would have made it.
    assert topic_name not in make_admin(settings).list_topics(timeout=10).topics


def test_an_existing_topic_is_required_quietly(
    broker: LocalBroker, settings: Settings, topic_name: str
) -> None:
    create_topic(settings, topic_name)

    require_topics(settings, [topic_name])


def test_a_topic_another_client_created_meanwhile_is_not_created_again(
    broker: LocalBroker, settings: Settings, topic_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eventlake.kafka import topics

    assert create_topic(settings, topic_name)
    made = topics.make_admin

    class ListedBefore:
        """An admin client whose topic list predates the other client's create: the
        broker refuses the create with TOPIC_ALREADY_EXISTS."""

        def __init__(self, admin: AdminClient) -> None:
            self.admin = admin

        def list_topics(self, *args: Any, **kwargs: Any) -> Any:
            listed = self.admin.list_topics(*args, **kwargs)
            listed.topics.pop(topic_name, None)
            return listed

        def __getattr__(self, name: str) -> Any:
            return getattr(self.admin, name)

    monkeypatch.setattr(topics, "make_admin", lambda settings: ListedBefore(made(settings)))

    assert create_topic(settings, topic_name) is False


def test_another_refused_create_is_raised(broker: LocalBroker, settings: Settings) -> None:
    with pytest.raises(KafkaException, match="Topic name is invalid"):
        create_topic(settings, "not a topic name!")


def test_every_missing_topic_is_named_in_one_sentence(
    broker: LocalBroker, settings: Settings, topic_name: str
) -> None:
    create_topic(settings, topic_name)

    with pytest.raises(UnknownTopicError, match="Topics 'gone-a', 'gone-b' do not exist"):
        require_topics(settings, ["gone-a", topic_name, "gone-b"])


def test_a_misspelt_topic_is_refused_with_the_topic_it_resembles(
    broker: LocalBroker, settings: Settings, topic_name: str
) -> None:
    create_topic(settings, topic_name)

    with pytest.raises(UnknownTopicError, match=f"did you mean '{topic_name}'"):
        require_topics(settings, [topic_name[:-1]])


def test_an_unknown_topic_like_none_there_is_told_the_topics_there() -> None:
    existing = ["__consumer_offsets", *(f"topic-{n:02}" for n in range(10))]
    message = unknown_topics_message(["zzz"], "k:9092", None, existing)

    assert "its topics are 'topic-00', 'topic-01'," in message
    assert "'topic-07' and 2 more." in message
    assert "__consumer_offsets" not in message


def test_an_unknown_topic_on_an_empty_cluster_is_told_so() -> None:
    assert "it has no topics." in unknown_topics_message(["zzz"], "k:9092", None, [])


def test_a_missing_topic_behind_credentials_may_be_one_they_cannot_see() -> None:
    message = unknown_topics_message(["orders"], "k:9093", "ingest-bot")

    assert "'orders' does not exist on Kafka at k:9093 (or user 'ingest-bot' may not" in message
    assert "may not" not in unknown_topics_message(["orders"], "k:9093", None)


def test_a_topic_pattern_java_cannot_compile_is_refused_in_a_sentence(spark: SparkSession) -> None:
    with pytest.raises(TopicPatternError) as refused:
        require_topic_pattern(spark, "orders-(")

    assert str(refused.value).startswith(
        "--topic-pattern 'orders-(' is not a Java regular expression (Unclosed group near index 8)"
    )
    assert "\n" not in str(refused.value)


def test_a_topic_pattern_in_java_only_syntax_is_accepted(spark: SparkSession) -> None:
    import re

    pattern = r"orders-\p{Alnum}+"  # Java's character class; Python's re refuses it
    with pytest.raises(re.error):
        re.compile(pattern)

    require_topic_pattern(spark, pattern)


def test_a_client_keeps_librdkafkas_log_lines_off_the_terminal(
    settings: Settings, capfd: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import KafkaException

    unreachable = settings.model_copy(update={"bootstrap_servers": "127.0.0.1:9"})

    with pytest.raises(KafkaException):
        make_admin(unreachable).list_topics(timeout=2)

    # librdkafka's own thread would print "%3|...|FAIL|..." per connection attempt.
    assert "|FAIL|" not in capfd.readouterr().err


def test_log_offsets_answer_for_every_partition_of_every_topic_asked(
    broker: LocalBroker, settings: Settings, topic_name: str
) -> None:
    other = f"{topic_name}-b"
    create_topic(settings, topic_name, partitions=2)
    create_topic(settings, other)
    producer = make_producer(settings)
    for topic, partition in ((topic_name, 0), (topic_name, 0), (topic_name, 0), (topic_name, 1)):
        producer.produce(topic, value=b"x", partition=partition)
    producer.produce(other, value=b"y", partition=0)
    assert producer.flush(30) == 0

    admin = make_admin(settings)
    asked = {topic_name: [0, 1], other: [0]}

    assert log_offsets(admin, asked) == {topic_name: {0: 3, 1: 1}, other: {0: 1}}
    assert log_offsets(admin, asked, start=True) == {topic_name: {0: 0, 1: 0}, other: {0: 0}}


def test_a_broker_that_does_not_answer_is_waited_for_with_a_line_then_refused(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    nowhere = settings.model_copy(update={"bootstrap_servers": "127.0.0.1:9"})

    with pytest.raises(KafkaConnectionError, match="did not answer within 3s"):
        check_connection(nowhere, timeout=3.0)

    waiting = capsys.readouterr().err
    assert waiting == "Kafka at 127.0.0.1:9 does not answer yet; waiting up to 3 s\n"
