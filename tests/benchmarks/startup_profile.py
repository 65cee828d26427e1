"""Where an ingest of an empty topic into a new warehouse spends its seconds before its
first record (issue 75 item 2): one process, each phase timed as it ends.

    python tests/benchmarks/startup_profile.py

Makes an empty topic (2 partitions) on the local broker, then in this process: the
imports, the Spark session (the JVM, its jars, the class archive), and in
:func:`eventlake.ingest.run_ingest` the Kafka checks, the table creation, the ledger's
reads and the available-now query (each wrapped where it is called). Prints one line per
phase with the seconds since the start; the machine should be idle.
"""

from __future__ import annotations

import functools
import shutil
import sys
import tempfile
import time
from pathlib import Path

STARTED = time.monotonic()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

import eventlake.ingest.run as ingest_run  # noqa: E402 (timed from before them)
from eventlake.ingest import IngestRequest, run_ingest  # noqa: E402 (timed from before them)
from eventlake.kafka.topics import create_topic, delete_topics  # noqa: E402 (timed from before them)
from eventlake.local.broker import LocalBroker  # noqa: E402 (timed from before them)
from eventlake.local.settings import load_local_settings  # noqa: E402 (timed from before them)
from eventlake.spark.session import build_spark_session  # noqa: E402 (timed from before them)
from tests.benchmarks.phases import timed  # noqa: E402 (timed from before them)

#: The phases of run_ingest timed, as the names it calls them by.
PHASES = (
    "check_connection",
    "require_topics",
    "ensure_tables",
    "compaction_warnings",
    "landed_marks",
    "_run_streaming",
)


def _add_phase(phases: list[tuple[str, float]], name: str, seconds: float) -> None:
    phases.append((name, seconds))


def main() -> int:
    phases: list[tuple[str, float]] = [("imports", time.monotonic() - STARTED)]
    settings = load_local_settings()
    LocalBroker(settings).start()
    topic = f"startup-profile-{int(time.time())}"
    create_topic(settings, topic, partitions=2)
    warehouse = Path(tempfile.mkdtemp(prefix="startup-profile-"))
    job = settings.model_copy(update={"warehouse": warehouse})
    try:
        began = time.monotonic()
        spark = build_spark_session(job, app_name="startup-profile")
        phases.append(("Spark session (JVM, jars, class archive)", time.monotonic() - began))
        for name in PHASES:
            record = functools.partial(_add_phase, phases, f"  {name}")
            setattr(ingest_run, name, timed(getattr(ingest_run, name), record))
        began = time.monotonic()
        summary = run_ingest(spark, job, IngestRequest(topics=(topic,)))
        phases.append(("run_ingest, all of it", time.monotonic() - began))
        began = time.monotonic()
        spark.stop()
        phases.append(("spark.stop", time.monotonic() - began))
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
        delete_topics(settings, [topic])
    for name, seconds in phases:
        print(f"{seconds:6.2f} s  {name}")
    print(f"{time.monotonic() - STARTED:6.2f} s  in all; {summary.line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
