"""What small commits and small files cost on the S3 server against a local folder: the
figures behind a stream's trigger, the Delta log's checkpoint interval and OPTIMIZE on
object storage (docs/deployment.md). Called by ``object_store_bench.py`` in the same
run; three measurements per store:

* **a batch:** ``ingest`` of a topic in batches of 1,000 records; the seconds between
  consecutive batch commits of the events table (their timestamps in its history) are
  one batch's whole cost: read, decode, the events and rejects commits, the ledger;
* **a JSON commit since the last checkpoint:** a table of 90 one-row appends (delta-rs)
  opened before and after a checkpoint; the difference over 90 is what each commit a
  reader replays costs;
* **a data file:** the same table read whole before and after compaction into one file;
  the difference over 89 is what each extra file costs a reader.

Example:
    >>> upkeep = UpkeepFigures.measure(settings_on_s3, broker_pid, topic)
    >>> upkeep.batch_seconds
    1.9
"""

from __future__ import annotations

import itertools
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import pyarrow as pa

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.storage.store import append_to_delta_table, open_delta_table, remove_tree
from tests.benchmarks.bench import JOB_SCRIPT, run_process

#: Records per batch of the batch measurement, and how many appends make the log.
BATCH_RECORDS: Final = 1_000
LOG_COMMITS: Final = 90
#: Repeats of each open and read: the median is kept.
REPEATS: Final = 7


def _median_seconds(action: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def batch_seconds(events: Location) -> list[float]:
    """Seconds between consecutive batch commits of one run into ``events`` (each batch
    commit names its run in its metadata; the table's creation does not)."""
    history = open_delta_table(events).history()
    stamps = sorted(c["timestamp"] for c in history if c.get("userMetadata"))
    return [(later - earlier) / 1000 for earlier, later in itertools.pairwise(stamps)]


@dataclass(frozen=True)
class UpkeepFigures:
    """One store's per-batch, per-commit and per-file costs (seconds, medians)."""

    store: str
    batch_seconds: float
    batches: int
    open_seconds_without_checkpoint: float
    open_seconds_with_checkpoint: float
    read_seconds_of_many_files: float
    read_seconds_of_one_file: float

    @property
    def seconds_per_json_commit(self) -> float:
        gap = self.open_seconds_without_checkpoint - self.open_seconds_with_checkpoint
        return gap / LOG_COMMITS

    @property
    def seconds_per_file(self) -> float:
        return (self.read_seconds_of_many_files - self.read_seconds_of_one_file) / (LOG_COMMITS - 1)

    @classmethod
    def measure(
        cls, store: str, settings: Settings, broker_pid: int | None, topic: str
    ) -> UpkeepFigures:
        """Run the three measurements into ``settings.warehouse`` (removed afterwards)."""
        in_batches = settings.model_copy(update={"max_offsets_per_trigger": BATCH_RECORDS})
        run_process([str(JOB_SCRIPT), "ingest", "--topic", topic], in_batches, broker_pid)
        gaps = batch_seconds(settings.warehouse / "events")
        log = settings.warehouse / f"log-{uuid.uuid4().hex[:6]}"
        for i in range(LOG_COMMITS):
            append_to_delta_table(log, pa.table({"i": pa.array([i], pa.int64())}))
        without_checkpoint = _median_seconds(lambda: open_delta_table(log).version())
        many_files = _median_seconds(lambda: open_delta_table(log).to_pyarrow_table())
        table = open_delta_table(log)
        table.optimize.compact()
        table = open_delta_table(log)
        table.create_checkpoint()
        with_checkpoint = _median_seconds(lambda: open_delta_table(log).version())
        one_file = _median_seconds(lambda: open_delta_table(log).to_pyarrow_table())
        if open_delta_table(log).to_pyarrow_table().num_rows != LOG_COMMITS:
            raise RuntimeError(f"the {store} log table lost rows in its compaction")
        remove_tree(settings.warehouse)
        return cls(
            store=store,
            batch_seconds=statistics.median(gaps),
            batches=len(gaps) + 1,
            open_seconds_without_checkpoint=without_checkpoint,
            open_seconds_with_checkpoint=with_checkpoint,
            read_seconds_of_many_files=many_files,
            read_seconds_of_one_file=one_file,
        )


def upkeep_lines(figures: list[UpkeepFigures]) -> list[str]:
    """The markdown rows of the measurement, one per store."""
    return [
        "",
        f"## Small commits and small files ({BATCH_RECORDS:,}-record batches; a log of "
        f"{LOG_COMMITS} one-row appends)",
        "",
        "| store | s per batch (median, batches) | open: no checkpoint / checkpoint (s) | "
        "s per JSON commit | read: many files / one (s) | s per file |",
        "|---|---|---|---|---|---|",
        *(
            f"| {f.store} | {f.batch_seconds:.2f} ({f.batches}) | "
            f"{f.open_seconds_without_checkpoint:.3f} / {f.open_seconds_with_checkpoint:.3f} | "
            f"{f.seconds_per_json_commit * 1000:.1f} ms | "
            f"{f.read_seconds_of_many_files:.3f} / {f.read_seconds_of_one_file:.3f} | "
            f"{f.seconds_per_file * 1000:.1f} ms |"
            for f in figures
        ),
    ]
