"""kafka-delta-ingest (delta-io, Rust) as a peer in the benches: one process landing a
topic of ``bench.py``'s structured events into a Delta table, timed to the commit that
holds every record. Needs a binary built from its source: at commit c6d42de,
``cargo build --release --features s3`` (one of ``s3`` or ``azure`` is required to
compile; the local folder works with either).

Example:
    >>> seconds, rows = kdi_run(Path("kafka-delta-ingest"), settings, {}, "orders", table, 1000)
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Final

import pyarrow as pa

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.storage.store import append_to_delta_table, open_delta_table

#: kafka-delta-ingest's flush interval: its last, partial file waits at most this long.
KDI_LATENCY_SECONDS: Final = 2
KDI_TIMEOUT_SECONDS: Final = 3600
#: kafka-delta-ingest's table: the structured events' fields as columns.
KDI_SCHEMA: Final = pa.schema(
    [
        ("specversion", pa.string()),
        ("datacontenttype", pa.string()),
        ("id", pa.string()),
        ("source", pa.string()),
        ("type", pa.string()),
        ("time", pa.string()),
        ("partitionkey", pa.string()),
        ("tenant", pa.string()),
        (
            "data",
            pa.struct(
                [
                    ("order", pa.string()),
                    ("n", pa.int64()),
                    ("amount", pa.float64()),
                    ("description", pa.string()),
                ]
            ),
        ),
    ]
)


def table_rows(location: Location) -> int:
    """Rows of a Delta table (local or on S3), from its files' statistics (delta-rs)."""
    table = open_delta_table(location)
    return int(sum(table.get_add_actions(flatten=True).column("num_records").to_pylist()))


def kdi_run(
    kdi: Path, settings: Settings, store: dict[str, str], topic: str, table: Location, records: int
) -> tuple[float, int]:
    """One kafka-delta-ingest process landing ``topic`` into ``table`` (made first): the
    seconds from its start to the commit that holds all ``records``, and its rows.

    Its ``--ends_at_latest_offsets`` does not end at the end (c6d42de compares each
    message's offset with the high watermark, the offset *after* the last record, so a
    partition ends only at a record produced after the start): the table is watched
    instead, and the time is that commit's timestamp; then the process is stopped.
    """
    empty = pa.Table.from_pylist([], schema=KDI_SCHEMA)
    append_to_delta_table(table, empty)
    env = {
        **os.environ,
        **store,
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",  # one writer; no DynamoDB lock here
        "RUST_LOG": "warn",
    }
    with tempfile.TemporaryFile("w+") as log:  # its "latency timer expired" lines
        started = time.time()
        process = subprocess.Popen(
            [str(kdi), "ingest", topic, str(table).replace("s3a://", "s3://"),
             "--kafka", settings.bootstrap_servers,
             "--consumer_group", f"kdi-{uuid.uuid4().hex[:8]}",
             "--app_id", "kdi-bench", "--auto_offset_reset", "earliest",
             "--allowed_latency", str(KDI_LATENCY_SECONDS),
             "--max_messages_per_batch", "100000"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            while (rows := table_rows(table)) < records:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(
                        f"kafka-delta-ingest exited {process.returncode} after {rows} rows: "
                        f"{log.read()[-3000:]}"
                    )
                if time.time() - started > KDI_TIMEOUT_SECONDS:
                    raise RuntimeError(f"kafka-delta-ingest landed {rows} of {records} in time")
                time.sleep(0.5)
            last_commit = open_delta_table(table).history(limit=1)[0]["timestamp"] / 1000
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    return last_commit - started, rows
