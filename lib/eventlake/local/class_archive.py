"""Building the Spark driver's class archive (:mod:`eventlake.spark.class_archive`): a driver
does eventlake's own work once, small, and the JVM writes the classes it loaded at exit.

The work: the decoder over records of both modes and bad ones, the tables, an append,
the read-back, a MERGE into a state table, a stream over a Delta table; no broker.
``make setup`` runs it through ``eventlake class-archive``.

Example:
    >>> build_archive(load_settings())
    PosixPath('/work/main/var/jvm/spark-driver.jsa')
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from eventlake.core.errors import EventlakeError
from eventlake.core.settings import Settings, load_settings
from eventlake.spark.class_archive import DUMP_TO_ENV, FINGERPRINT_SUFFIX, fingerprint
from eventlake.spark.conf import driver_jvm_options, spark_jars
from eventlake.spark.session import build_spark_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class ClassArchiveError(EventlakeError, RuntimeError):
    """The archive could not be built; the message says why."""


def build_archive(settings: Settings, *, timeout: float = 600.0) -> Path:
    """Run eventlake's work once in a driver that writes the archive at exit; then put it
    at ``settings.class_archive`` with its fingerprint. Returns the archive's path.

    Raises :class:`ClassArchiveError` when the run fails or writes no archive.
    """
    archive = settings.class_archive
    if archive is None:
        raise ClassArchiveError("EVENTLAKE_CLASS_ARCHIVE is empty: no archive to build")
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="class-archive-") as scratch:
        partial = Path(scratch) / archive.name
        env = {
            **os.environ,
            DUMP_TO_ENV: str(partial),
            # What the archive must match, from these settings rather than the
            # environment's: the jars, and the JVM options the driver starts with.
            "EVENTLAKE_JARS_DIR": str(settings.jars_dir),
            "EVENTLAKE_LOG_CONFIG": str(settings.log_config),
            "EVENTLAKE_DRIVER_JAVA_OPTIONS": driver_jvm_options(settings),
        }
        run = subprocess.run(
            [sys.executable, "-m", "eventlake.local.class_archive", scratch],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if run.returncode != 0 or not partial.is_file():
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-15:])
            raise ClassArchiveError(
                f"the training run exited {run.returncode} and wrote "
                f"{'an' if partial.is_file() else 'no'} archive:\n{tail}"
            )
        stamp = archive.with_name(archive.name + FINGERPRINT_SUFFIX)
        stamp.unlink(missing_ok=True)
        os.replace(partial, archive)
    built_from = fingerprint(spark_jars(settings))
    built = {"built": datetime.now(UTC).isoformat(), "fingerprint": built_from}
    stamp.write_text(json.dumps(built, indent=2) + "\n")
    return archive


def exercise(settings: Settings, scratch: Path) -> None:
    """eventlake's driver work, once and small, so that its classes get loaded: the
    decoder over records of both modes and bad ones, the tables, an append, the
    read-back, a MERGE into a state table, a stream over a Delta table. No broker:
    Kafka's classes, a few hundred, load from the jars (an archive that also held them,
    from an ingest and a republish on a broker of the run's own, started an empty-topic
    ingest no sooner: 7.05-7.12 s against 7.12-7.17 s)."""
    from eventlake.ingest.batch import land_batch
    from eventlake.ingest.state_backlog import LandedBatch, read_back
    from eventlake.ledger.commits import Ledger
    from eventlake.local.samples import sample_records
    from eventlake.state.apply import StateMarks, apply_state
    from eventlake.warehouse.names import EVENTS, REJECTS
    from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA
    from eventlake.warehouse.tables import ensure_tables

    # A local driver: the archive is of the driver's classes, wherever its tasks run.
    settings = settings.model_copy(
        update={"warehouse": scratch / "warehouse", "spark_master": "local[2]"}
    )
    spark = build_spark_session(settings, app_name="eventlake-class-archive")
    topic = "class-archive"
    now = datetime.now(UTC)
    records = spark.createDataFrame(
        [
            (r.key, r.value, topic, i % 2, i // 2, now, 0, r.headers)
            for i, r in enumerate(sample_records(200))
        ],
        KAFKA_SOURCE_SCHEMA,
    )
    ensure_tables(spark, settings)
    events, rejects = str(settings.table_path(EVENTS)), str(settings.table_path(REJECTS))
    ends = {(topic, 0): 100, (topic, 1): 100}
    ledger = Ledger(spark)
    result = land_batch(
        spark,
        records,
        ledger=ledger,
        ends=ends,
        events_path=events,
        rejects_path=rejects,
        note="class archive",
    )
    batch, from_files = read_back(
        spark, [LandedBatch(result, ends)], records, events, rejects, {}, ends
    )
    # Twice: a topic's first rows written into the new table, then a MERGE into a full one.
    marks = StateMarks(ledger, ends, caught_up_ms=None, note="class archive")
    for _ in range(2):
        apply_state(spark, settings, batch, topics=[topic], marks=marks, read_back=from_files)

    def count(rows: DataFrame, _batch_id: int) -> None:
        rows.count()

    (
        spark.readStream.format("delta")
        .load(events)
        .writeStream.foreachBatch(count)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(scratch / "stream"))
        .start()
        .awaitTermination()
    )
    spark.stop()


if __name__ == "__main__":
    exercise(load_settings(), Path(sys.argv[1]))
