"""``eventlake reconcile``: ``state/<topic>`` rebuilt from the topic read from its
beginning, with the state marks moved to where that read ended.

Example:
    >>> reconcile_state(spark, settings, "demo.orders").rows
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import (
    EVENT_COLUMNS,
    decode_records,
)
from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.ledger.commits import Ledger
from eventlake.runs.lineage import job_run, kafka_dataset, warehouse_dataset
from eventlake.spark.session import session_conf
from eventlake.state.apply import (
    StateFencedError,
    commit_first_rows,
    commit_state_marks,
    fenced_merge,
    merge_metrics,
    run_fenced,
)
from eventlake.state.recorded_risk import recorded_compaction_risk
from eventlake.state.records import applicable_records, latest_per_key
from eventlake.state.retry import merge_retried
from eventlake.state.table import ensure_state_table
from eventlake.warehouse.catalog import register_table
from eventlake.warehouse.delta_log import empty_at
from eventlake.warehouse.names import (
    COMPACTION_RISK_PROPERTY,
    delta_path_sql,
    state_table,
)
from eventlake.warehouse.tables import MATERIALIZED_SOURCE_CONFS, merge_source

_log = progress_log(__name__)


@dataclass(frozen=True)
class ReconcileReport:
    """What ``eventlake reconcile`` changed to make the state table equal the topic."""

    topic: str
    records_read: int
    keys_on_topic: int
    inserted: int
    updated: int
    deleted: int

    def line(self) -> str:
        return (
            f"reconcile {self.topic}: read={self.records_read} keys={self.keys_on_topic} "
            f"inserted={self.inserted} updated={self.updated} deleted={self.deleted}"
        )


def reconcile_state(spark: SparkSession, settings: Settings, topic: str) -> ReconcileReport:
    """Read the topic from earliest to its current end, compute the latest record per
    key, and make ``state/<topic>`` equal to it: upsert what differs, delete keys that
    no longer exist on the topic (tombstoned, or compacted away unseen).

    Holds the topic's lease (:func:`eventlake.ledger.lease.topic_leases`): a stream that keeps
    the state table waits for it between two batches, and its next batch applies only
    records after the offsets read here, which the state marks then hold. A MERGE that
    loses a commit race to maintenance (OPTIMIZE) is retried. The table is registered
    in the catalog when ``settings.metastore_uri`` is set
    (:func:`~eventlake.warehouse.catalog.register_table`). With its OpenLineage run
    events when lineage is configured (:mod:`eventlake.runs.lineage`).
    """
    with job_run(
        spark,
        f"reconcile.{topic}",
        inputs=[kafka_dataset(settings.bootstrap_servers, topic)],
        outputs=[warehouse_dataset(settings, state_table(topic))],
    ):
        return _reconcile_state(spark, settings, topic)


def _reconcile_state(spark: SparkSession, settings: Settings, topic: str) -> ReconcileReport:
    from delta.tables import DeltaTable

    from eventlake.kafka.connection import check_connection
    from eventlake.kafka.connector_options import kafka_source_options
    from eventlake.kafka.topics import require_topics, topic_offsets
    from eventlake.ledger.offset_ranges import offsets_json

    # Refused in a sentence, before any lease: no broker, or no such topic.
    check_connection(settings)
    require_topics(settings, [topic])
    ledger = Ledger(spark)
    with ledger.leases(settings.warehouse, [topic], job="reconcile"):
        path = ensure_state_table(spark, settings, topic)
        # By name in the catalog, as ingest registers the tables it makes.
        for name in register_table(spark, settings, state_table(topic)):
            _log.info("catalog: registered %s", name)
        # Read before the topic is: a state step that lands after this read moves the
        # fence, and the MERGE below is then refused instead of undoing it.
        fence = fenced_merge(ledger, path, topic)
        read_at_ms = int(time.time() * 1000)
        _, head = topic_offsets(settings, topic)
        ends = {(topic, p): offset for p, offset in head.items()}
        records = (
            spark.read.format("kafka")
            .options(
                **kafka_source_options(
                    settings,
                    {"subscribe": topic},
                    starting_offsets="earliest",
                    ending_offsets=offsets_json(ends),
                )
            )
            .load()
        )
        decoded = decode_records(records).cache()
        try:
            read = decoded.count()
            latest = merge_source(latest_per_key(applicable_records(decoded)))
            wanted = latest.where(~F.col("_tombstone"))
            keys = wanted.count()
            version = empty_at(path)
            first = (
                None
                if version is None
                else commit_first_rows(
                    ledger,
                    settings,
                    topic,
                    wanted.select(*EVENT_COLUMNS),
                    version,
                    ends,
                    caught_up_ms=read_at_ms,
                    note="reconcile",
                )
            )
            values: dict[str, str | Column] = {c: f"s.{c}" for c in EVENT_COLUMNS}
            differs = (
                "NOT (t.kafka_partition <=> s.kafka_partition "
                "AND t.kafka_offset <=> s.kafka_offset)"
            )

            def merge() -> None:
                builder = (
                    DeltaTable.forPath(spark, path)
                    .alias("t")
                    .merge(wanted.alias("s"), "t.kafka_key = s.kafka_key")
                    .whenMatchedUpdate(condition=differs, set=values)
                    .whenNotMatchedInsert(values=values)
                    .whenNotMatchedBySourceDelete()
                )
                if run_fenced(builder.execute, path).first() is None:
                    raise StateFencedError(
                        f"reconcile {topic}: another process changed state/{topic} while "
                        "the topic was read; nothing was merged: run reconcile again"
                    )

            if first is not None:
                # A table with no rows (a full refresh's new one): written with the marks.
                metrics = {"numTargetRowsInserted": first}
            else:
                with session_conf(spark, {**MATERIALIZED_SOURCE_CONFS, **fence}):
                    # The lease keeps state writers out; maintenance may still rewrite
                    # the files (OPTIMIZE): the MERGE then commits nothing, and is run
                    # again on the new snapshot.
                    merge_retried(
                        merge,
                        what=f"reconcile {topic}",
                        table=f"state/{topic}",
                        then="run it again once maintenance of the table (eventlake "
                        "maintain) has finished.",
                    )
                metrics = merge_metrics(spark, path)
                commit_state_marks(
                    ledger, settings, topic, ends, caught_up_ms=read_at_ms, note="reconcile"
                )
            # The table now equals the topic: whatever it may have missed is repaired.
            # (Delta commits an UNSET even of a property that is not there.)
            if recorded_compaction_risk(path) is not None:
                spark.sql(
                    f"ALTER TABLE {delta_path_sql(path)} UNSET TBLPROPERTIES IF EXISTS "
                    f"('{COMPACTION_RISK_PROPERTY}')"
                )
        finally:
            decoded.unpersist()
    return ReconcileReport(
        topic=topic,
        records_read=read,
        keys_on_topic=keys,
        inserted=metrics.get("numTargetRowsInserted", 0),
        updated=metrics.get("numTargetRowsUpdated", 0),
        deleted=metrics.get("numTargetRowsDeleted", 0),
    )
