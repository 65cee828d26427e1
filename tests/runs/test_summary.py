"""eventlake.runs.summary: the counts every ingest and republish run keeps."""

from __future__ import annotations

from eventlake.ingest import IngestSummary
from eventlake.republish import RepublishSummary


def test_a_batch_adds_accepted_records_and_rejects_by_reason() -> None:
    summary = IngestSummary()
    summary.add_batch({None: 8, "malformed_json": 2})
    summary.add_batch({None: 1, "malformed_json": 1, "plain_tombstone": 3})
    assert (summary.batches, summary.records_read, summary.events) == (2, 15, 9)
    assert dict(summary.rejects_by_reason) == {"malformed_json": 3, "plain_tombstone": 3}
    assert summary.rejects == 6


def test_progress_text_names_the_totals_as_each_job_does() -> None:
    ingest, republish = IngestSummary(), RepublishSummary(source="a", target="b")
    for summary in (ingest, republish):
        summary.add_batch({None: 9, "missing_key": 1})
    assert ingest.counts_text() == "batches=1 read=10 events=9 rejects=1"
    assert republish.counts_text() == "batches=1 read=10 republished=9 rejected=1"


def test_the_summary_line_lists_reasons_sorted_and_a_stopping_signal() -> None:
    summary = IngestSummary()
    summary.add_batch({None: 1, "z_reason": 1, "a_reason": 2})
    summary.stopped_by = "SIGTERM"
    line = summary.line()
    assert "read=4 events=1 rejects=3 (a_reason=2, z_reason=1)" in line
    assert line.endswith("stopped_by=SIGTERM")
