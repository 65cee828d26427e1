"""Ingest CloudEvents from Kafka into the events and rejects Delta tables, exactly once.

Two ways to run, one decode and write path:

* streaming (Structured Streaming, ``available-now`` or ``processing-time=<interval>``):
  Spark's checkpoint caches where the stream is;
* bounded batch (explicit ending offsets, for backfills and full refreshes): one batch
  from where the tables stand up to the ending offsets.

Both land only what the ledger (:mod:`eventlake.ledger.marks`) does not hold yet, and move
it in the same commits as the rows: a batch replayed after a crash, a backfill before
the next scheduled run, or two processes on one topic never write a record twice.

Every record read lands in exactly one table: the decoder gives each row either no
reject reason (events) or one (rejects).

Example:
    >>> summary = run_ingest(spark, settings, IngestRequest(topics=("orders",)))
    >>> print(summary.line())
    ingest: read=120 events=117 rejects=3 (plain_tombstone=3) batches=1 seconds=4.2

Modules: :mod:`~eventlake.ingest.request` (the request, the summary, the Kafka source
options), :mod:`~eventlake.ingest.batch` (one micro-batch into the tables),
:mod:`~eventlake.ingest.run` (streaming and bounded runs). The binding's rules are not
here (the JVM decoder and :mod:`eventlake.binding.decode`), nor the tables
(:mod:`eventlake.warehouse.tables`), the micro-batch loop (:mod:`eventlake.runs.streaming`), the
counts every run keeps (:mod:`eventlake.runs.summary`) or the state tables
(:mod:`eventlake.state`).
"""

from eventlake.ingest.batch import BatchResult, land_batch
from eventlake.ingest.request import IngestError, IngestRequest, IngestSummary
from eventlake.ingest.run import run_ingest

__all__ = [
    "BatchResult",
    "IngestError",
    "IngestRequest",
    "IngestSummary",
    "land_batch",
    "run_ingest",
]
