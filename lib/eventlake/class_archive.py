"""The class archive of eventlake's Spark driver: the JVM's class-data sharing (CDS).

A Spark driver with Delta and the Kafka connector loads ~20,000 classes from ~300 jars at
every start: reading, parsing, verifying and linking them is seconds of a job's start-up.
A dynamic CDS archive (``-XX:ArchiveClassesAtExit``, JDK 13 and later) holds those
classes ready to map; :func:`archive_java_option` gives the driver the option that maps
it. ``make setup`` builds the archive with :func:`build_archive` (``eventlake
class-archive``), which runs eventlake's own work in a driver once (decode, the Delta
tables, an append, a read-back, a MERGE, a stream) without a broker, and writes the
archive beside a fingerprint of what it was made from: the Java binary, pyspark and the
jars. A driver maps the archive only while that fingerprint holds, so a JDK upgrade or new
jars never meet a stale archive (the JVM would refuse it with a warning); rebuilding is
``eventlake class-archive`` again.

Example:
    >>> build_archive(load_settings())
    PosixPath('/work/main/var/jvm/spark-driver.jsa')
    >>> archive_java_option(load_settings())
    '-XX:SharedArchiveFile=/work/main/var/jvm/spark-driver.jsa'
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from eventlake.settings import Settings, load_settings

#: Beside the archive: what it was built from (:func:`fingerprint`).
FINGERPRINT_SUFFIX: Final = ".json"
#: Set in the process that builds the archive: where the JVM writes it at exit.
_DUMP_TO_ENV: Final = "EVENTLAKE_CLASS_ARCHIVE_DUMP_TO"


class ClassArchiveError(RuntimeError):
    """The archive could not be built; the message says why."""


def java_binary() -> Path | None:
    """The ``java`` that PySpark starts (``$JAVA_HOME/bin/java``, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def fingerprint(settings: Settings) -> dict[str, Any]:
    """What an archive is valid for: the Java binary, pyspark's version and the jars.

    Example:
        >>> fingerprint(load_settings())["pyspark"]
        '3.5.3'
    """
    import pyspark

    from eventlake.spark import spark_jars

    def stamp(path: Path) -> list[Any]:
        stat = path.stat()
        return [str(path), stat.st_size, int(stat.st_mtime)]

    java = java_binary()
    return {
        "java": stamp(java) if java is not None else None,
        "pyspark": pyspark.__version__,
        "pyspark_jars": sorted(
            p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
        ),
        "jars": [stamp(jar) for jar in spark_jars(settings)],
    }


def archive_java_option(settings: Settings) -> str | None:
    """The driver's JVM option that maps the archive, or None when there is no archive
    valid for this Java, pyspark and jars (or ``settings.class_archive`` is unset).

    Example:
        >>> archive_java_option(load_settings(class_archive=None)) is None
        True
    """
    archive = settings.class_archive
    if archive is None or os.environ.get(_DUMP_TO_ENV) or not archive.is_file():
        return None
    stamp = archive.with_name(archive.name + FINGERPRINT_SUFFIX)
    try:
        built_from = json.loads(stamp.read_text())["fingerprint"]
        current = fingerprint(settings)
    except (OSError, ValueError, KeyError):
        return None
    return f"-XX:SharedArchiveFile={archive}" if built_from == current else None


def dump_java_option() -> str | None:
    """In the process that builds the archive: the option that writes it at JVM exit."""
    target = os.environ.get(_DUMP_TO_ENV)
    return f"-XX:ArchiveClassesAtExit={target}" if target else None


def is_current(settings: Settings) -> bool:
    """Whether the archive exists and was built from this Java, pyspark and jars."""
    return archive_java_option(settings) is not None


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
            _DUMP_TO_ENV: str(partial),
            # What the archive must match, from these settings rather than the
            # environment's: the jars, and the JVM options the driver starts with.
            "EVENTLAKE_JARS_DIR": str(settings.jars_dir),
            "EVENTLAKE_LOG_CONFIG": str(settings.log_config),
            "EVENTLAKE_DRIVER_JAVA_OPTIONS": settings.driver_java_options,
        }
        run = subprocess.run(
            [sys.executable, "-m", "eventlake.class_archive", scratch],
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
    built = {"built": datetime.now(UTC).isoformat(), "fingerprint": fingerprint(settings)}
    stamp.write_text(json.dumps(built, indent=2) + "\n")
    return archive


def exercise(settings: Settings, scratch: Path) -> None:
    """eventlake's driver work, once and small, so that its classes get loaded: the
    decoder over records of both modes and bad ones, the tables, an append, the
    read-back, a MERGE into a state table and a stream over a Delta table."""
    from pyspark.sql import DataFrame

    from eventlake.batch_commits import BatchCommits
    from eventlake.binding import decode_records
    from eventlake.ingest.batch import append_batch
    from eventlake.local.samples import sample_records
    from eventlake.spark import build_spark_session
    from eventlake.state import apply_state, records_from_tables
    from eventlake.tables import (
        EVENTS,
        EVENTS_SCHEMA,
        KAFKA_SOURCE_SCHEMA,
        REJECTS,
        REJECTS_SCHEMA,
        ensure_tables,
        rows_added_by,
    )

    # A local driver: the archive is of the driver's classes, wherever its tasks run.
    local = settings.model_copy(
        update={"warehouse": scratch / "warehouse", "spark_master": "local[2]"}
    )
    spark = build_spark_session(local, app_name="eventlake-class-archive")
    topic = "class-archive"
    now = datetime.now(UTC)
    records = spark.createDataFrame(
        [
            (r.key, r.value, topic, i % 2, i // 2, now, 0, r.headers)
            for i, r in enumerate(sample_records(200))
        ],
        KAFKA_SOURCE_SCHEMA,
    )
    ensure_tables(spark, local)
    events, rejects = str(local.table_path(EVENTS)), str(local.table_path(REJECTS))
    (scratch / "commits").mkdir()
    commits = BatchCommits.open(spark, scratch / "commits", topic, [events, rejects], fresh=True)
    result = append_batch(
        spark,
        records,
        commits=commits,
        version=0,
        events_path=events,
        rejects_path=rejects,
        locate=True,
    )
    added = rows_added_by(spark, events, result.located[events], EVENTS_SCHEMA)
    rejected = (
        rows_added_by(spark, rejects, result.located[rejects], REJECTS_SCHEMA)
        if rejects in result.located
        else None
    )
    batch = records_from_tables(added, rejected) if added is not None else decode_records(records)
    apply_state(spark, local, batch, topics=[topic], app_id=topic, version=0)

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
