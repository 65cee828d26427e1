"""Ingest CloudEvents from Kafka into the events and rejects Delta tables, exactly once.

Two ways to run, one decode and write path:

* streaming (Structured Streaming, ``available-now`` or ``processing-time=<interval>``):
  progress lives in a checkpoint; each micro-batch's commits name the batch
  (:mod:`eventlake.batch_commits`), so a batch replayed after a crash is not written
  twice;
* bounded batch (explicit ending offsets, for backfills and replays): the records are
  merged into the tables on their Kafka coordinates, inserting only what is absent, so
  a replay of a range already ingested adds nothing.

Every record read lands in exactly one table: the decoder gives each row either no
reject reason (events) or one (rejects).

Example:
    >>> summary = run_ingest(spark, settings, IngestRequest(topics=("orders",)))
    >>> print(summary.line())
    ingest: read=120 events=117 rejects=3 (plain_tombstone=3) batches=1 seconds=4.2

Modules: :mod:`~eventlake.ingest.request` (the request, the summary, the Kafka source
options), :mod:`~eventlake.ingest.batch` (one micro-batch into the tables),
:mod:`~eventlake.ingest.run` (streaming and bounded runs). The binding's rules are not
here (the JVM decoder and :mod:`eventlake.binding`), nor the tables
(:mod:`eventlake.tables`), the micro-batch loop (:mod:`eventlake.streaming`), the
counts every run keeps (:mod:`eventlake.run_summary`) or the state tables
(:mod:`eventlake.state`).
"""

from eventlake.ingest.batch import BatchResult, append_batch
from eventlake.ingest.request import IngestError, IngestRequest, IngestSummary
from eventlake.ingest.run import next_offsets_from_tables, run_ingest

__all__ = [
    "BatchResult",
    "IngestError",
    "IngestRequest",
    "IngestSummary",
    "append_batch",
    "next_offsets_from_tables",
    "run_ingest",
]
