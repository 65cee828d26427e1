"""eventlake.status.pending: whether an ingest or a republish has anything to do, without Spark."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import Result
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from eventlake.cli import app
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.republish import RepublishRequest, run_republish
from eventlake.status.pending import nothing_to_land, nothing_to_send
from eventlake.warehouse.names import EVENTS, REJECTS
from eventlake.warehouse.schemas import EVENTS_SCHEMA, REJECTS_SCHEMA
from eventlake.warehouse.tables import table_schema
from tests.helpers import produce_events, read_table


def _command(settings: Settings, *arguments: str) -> list[str]:
    """An ``eventlake`` command line on the test's warehouse and broker."""
    where = ["--warehouse", str(settings.warehouse), "--bootstrap-servers"]
    return [*arguments, *where, settings.bootstrap_servers]


def _idle_then_new(
    settings: Settings,
    topic: str,
    arguments: list[str],
    new_records: int,
    nothing_new: Callable[[], bool],
) -> tuple[Result, Result]:
    """The command run with nothing new, then ``new_records`` produced (the check now
    sees them), then the command again: both runs' results."""
    idle = CliRunner().invoke(app, arguments)
    produce_events(settings, topic, new_records, prefix="next")
    assert not nothing_new()
    return idle, CliRunner().invoke(app, arguments)


def test_an_empty_topic_into_a_new_warehouse_has_nothing_to_land_once_its_tables_are_made(
    broker: LocalBroker, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    request = IngestRequest(topics=(topic_name,))

    assert nothing_to_land(warehouse_settings, request)

    # Made by the check, as a run would make them: the run needs no Spark.
    assert table_schema(warehouse_settings.table_path(EVENTS)) == EVENTS_SCHEMA
    assert table_schema(warehouse_settings.table_path(REJECTS)) == REJECTS_SCHEMA
    produce_events(warehouse_settings, topic_name, 1)
    assert not nothing_to_land(warehouse_settings, request)


def test_a_topic_with_records_into_a_new_warehouse_is_left_to_the_run_that_makes_the_tables(
    broker: LocalBroker, warehouse_settings: Settings, topic_name: str
) -> None:
    # Delta makes them then: its first write into a table delta-rs made costs more.
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 1)

    assert not nothing_to_land(warehouse_settings, IngestRequest(topics=(topic_name,)))
    assert table_schema(warehouse_settings.table_path(EVENTS)) is None


def test_with_a_catalog_a_new_warehouse_is_left_to_the_run_that_names_its_tables(
    broker: LocalBroker, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    cataloged = warehouse_settings.model_copy(update={"metastore_uri": "thrift://127.0.0.1:1"})

    assert not nothing_to_land(cataloged, IngestRequest(topics=(topic_name,)))
    assert table_schema(warehouse_settings.table_path(EVENTS)) is None


def test_runs_the_check_cannot_answer_for_are_left_to_spark(
    broker: LocalBroker, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)

    for request in (
        IngestRequest(topics=(topic_name,), state=True),  # the state's compaction check
        IngestRequest(topic_pattern=f"{topic_name}.*"),  # the pattern's topics
        IngestRequest(topics=(topic_name,), ending_offsets="latest"),  # a bounded run
        IngestRequest(topics=(f"{topic_name}-missing",)),  # the run refuses it
    ):
        assert not nothing_to_land(warehouse_settings, request), request


def test_an_ingest_with_nothing_new_says_so_and_the_next_lands_only_the_new_records(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 4)
    request = IngestRequest(topics=(topic_name,))
    run_ingest(spark, warehouse_settings, request)
    arguments = _command(warehouse_settings, "ingest", "--topic", topic_name)

    assert nothing_to_land(warehouse_settings, request)
    idle, landing = _idle_then_new(
        warehouse_settings,
        topic_name,
        arguments,
        2,
        lambda: nothing_to_land(warehouse_settings, request),
    )

    assert idle.exit_code == 0, idle.output
    assert f"ingest: nothing new on {topic_name}" in idle.output
    assert "read=0 events=0 rejects=0 batches=0" in idle.output
    assert landing.exit_code == 0, landing.output
    assert "read=2 events=2" in landing.output
    assert read_table(spark, warehouse_settings, "events").count() == 6


def test_a_republish_with_nothing_new_says_so_and_the_next_sends_only_the_new_records(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 2)
    target = f"{topic_name}.copy"
    request = RepublishRequest(source=topic_name, target=target)
    assert not nothing_to_send(warehouse_settings, request)  # the target is not there yet
    run_republish(spark, warehouse_settings, request)
    assert nothing_to_send(warehouse_settings, request)
    # Another route from the same source has sent nothing yet.
    other = RepublishRequest(source=topic_name, target=f"{topic_name}.other")
    assert not nothing_to_send(warehouse_settings, other)
    route = ["--source", topic_name, "--target", target]
    arguments = _command(warehouse_settings, "republish", *route)

    idle, sending = _idle_then_new(
        warehouse_settings,
        topic_name,
        arguments,
        3,
        lambda: nothing_to_send(warehouse_settings, request),
    )

    assert idle.exit_code == 0, idle.output
    assert f"republish: nothing new on {topic_name}" in idle.output
    assert "read=0 republished=0" in idle.output
    assert sending.exit_code == 0, sending.output
    assert "read=3 republished=3" in sending.output
