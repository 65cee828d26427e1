"""The benchmark's reference job: what a user would write to land these events WITHOUT
validation. It is not part of eventlake; ``make bench`` times eventlake ingest against it.

A plain PySpark batch job: Spark's Kafka source reads the whole topic (headers included,
eventlake's bootstrap and security options); records whose content-type header is
``application/cloudevents+json`` (structured mode) are parsed with ``from_json`` and a
fixed schema, the others (binary mode) take their attributes from
``map_from_entries(headers)`` (``ce_`` headers cast to string) and their data from the
value; both become one frame, written with ONE Delta append to ``--table``. Nothing is
checked: no required attributes, no spec version, no rejects, no exactly-once.

The SparkSession is eventlake's own (:func:`eventlake.spark.session.build_spark_session`): the
same jars and settings (``EVENTLAKE_*`` environment variables) as an ingest process.

    python tests/benchmarks/plain_pyspark_ingest.py --topic orders --table /tmp/plain

Prints one JSON line at the end: ``work_seconds`` (from the read to the committed
append, the session's start-up excluded) and ``rows`` (the append's numOutputRows).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from eventlake.core.settings import load_settings
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.spark.session import build_spark_session

STRUCTURED_CONTENT_TYPE = "application/cloudevents+json"
#: The fixed schema of a structured event; data stays JSON text.
EVENT_SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("source", StringType()),
        StructField("specversion", StringType()),
        StructField("type", StringType()),
        StructField("datacontenttype", StringType()),
        StructField("dataschema", StringType()),
        StructField("subject", StringType()),
        StructField("time", TimestampType()),
        StructField("data", StringType()),
    ]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topic", required=True)
    parser.add_argument("--table", required=True, type=Path, help="Delta table folder")
    args = parser.parse_args()

    settings = load_settings()
    spark = build_spark_session(settings, app_name="plain-pyspark-ingest")

    started = time.perf_counter()
    records = (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
    )
    headers = F.map_from_entries("headers")
    content_type = headers["content-type"].cast("string")
    staged = records.select(
        F.coalesce(content_type.startswith(STRUCTURED_CONTENT_TYPE), F.lit(False)).alias(
            "structured"
        ),
        headers.alias("headers"),
        F.col("value").cast("string").alias("value"),
    ).select(
        "structured",
        "headers",
        "value",
        F.when(F.col("structured"), F.from_json("value", EVENT_SCHEMA)).alias("event"),
    )

    def attribute(name: str, from_headers: Column | None = None) -> Column:
        binary = F.col("headers")[f"ce_{name}"].cast("string")
        return (
            F.when(F.col("structured"), F.col("event")[name])
            .otherwise(binary if from_headers is None else from_headers)
            .alias(name)
        )

    events = staged.select(
        attribute("id"),
        attribute("source"),
        attribute("specversion"),
        attribute("type"),
        attribute("datacontenttype", F.col("headers")["content-type"].cast("string")),
        attribute("dataschema"),
        attribute("subject"),
        attribute("time", F.col("headers")["ce_time"].cast("string").cast("timestamp")),
        attribute("data", F.col("value")),
    )
    events.write.format("delta").mode("append").save(str(args.table))
    work_seconds = time.perf_counter() - started

    print(json.dumps({"work_seconds": work_seconds, "rows": appended_rows(args.table)}))


def appended_rows(table: Path) -> int | None:
    """numOutputRows of the table's latest commit (read from its log, no Spark job)."""
    commits = sorted((table / "_delta_log").glob("*.json"))
    if not commits:
        return None
    for line in commits[-1].read_text().splitlines():
        info = json.loads(line).get("commitInfo")
        if info is not None:
            rows = info.get("operationMetrics", {}).get("numOutputRows")
            return int(rows) if rows is not None else None
    return None


if __name__ == "__main__":
    main()
