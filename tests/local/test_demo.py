"""eventlake.local.demo: what the demo shows of its warehouse. The demo itself runs with
`make demo` (broker, Airflow and the DAGs)."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.local.demo import DEMO_TOPIC, QUERIES
from eventlake.views.query import register_tables
from tests.helpers import produce_events


def test_the_demos_counts_are_its_topics_alone_in_a_shared_warehouse(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    for topic, count in ((DEMO_TOPIC, 4), (topic_name, 6)):
        create_topic(warehouse_settings, topic)
        produce_events(warehouse_settings, topic, count, invalid_every=3)
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(DEMO_TOPIC, topic_name)))
    own = spark.newSession()  # the views stay in this test's session
    register_tables(own, warehouse_settings, typed=False)
    (_, events_sql), (_, rejects_sql) = QUERIES[:2]

    shown = (
        own.sql(events_sql).agg(F.sum("events")).first()[0],
        own.sql(rejects_sql).agg(F.sum("records")).first()[0],
    )

    demo = F.col("kafka_topic") == DEMO_TOPIC
    landed = (own.table("events").where(demo).count(), own.table("rejects").where(demo).count())
    assert shown == landed and min(landed) > 0
