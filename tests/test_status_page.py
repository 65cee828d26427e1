"""eventlake.status_page: the page is rendered from the JSON of `eventlake status --json`
(no broker, no Spark: a hand-made report)."""

from __future__ import annotations

from typing import Any

from eventlake.status_page import render_page, topic_rows


def _report(**changes: Any) -> dict[str, Any]:
    partitions = [
        {"topic": "orders", "partition": n, "current_offset": 10, "log_end_offset": 12 + n}
        | {"state_offset": None, "lag": 2 + n}
        for n in (0, 1)
    ]
    checkpoint = {
        "name": "ingest-topics_orders",
        "job": "ingest",
        "source": "topics:orders",
        "last_batch": 3,
        "last_batch_at": "2026-11-25T06:00:00+00:00",
        "held_by": {"pid": 42, "host": "etl-1", "trigger": "processing-time=5 seconds"},
        "stream": True,
        "problem": None,
        "partitions": partitions,
    }
    report = {
        "checkpoints": [checkpoint],
        "compaction_risks": {"orders": {"found_at": "2026-11-24T05:00:00+00:00"}},
        "kafka_error": None,
        "quality": {
            "orders": {"verdict": "failed", "run_id": "r", "run_time": None, "checks": 3}
            | {"failed_errors": 1, "failed_warnings": 1}
        },
    }
    return report | changes


def test_a_row_per_topic_sums_its_partitions() -> None:
    (row,) = topic_rows(_report())

    assert (row.topic, row.lag, row.landed) == ("orders", "5", "20 / 25")
    assert row.last_batch == "#3 at 2026-11-25 06:00:00 UTC"
    assert row.held_by == "stream: pid 42 on etl-1"
    assert row.compaction_risk.startswith("since 2026-11-24T05:00:00+00:00")
    assert row.quality.startswith("FAILED: 2 of 3 failed")


def test_an_unknown_log_end_makes_the_lag_unknown_not_zero() -> None:
    report = _report()
    report["checkpoints"][0]["partitions"][1] |= {"log_end_offset": None, "lag": None}

    (row,) = topic_rows(report | {"kafka_error": "timed out"})

    assert (row.lag, row.landed) == ("?", "20 / ?")
    assert "Kafka did not answer (timed out)" in render_page(report | {"kafka_error": "timed out"})


def test_every_value_is_escaped() -> None:
    report = _report()
    report["checkpoints"][0]["partitions"][0]["topic"] = "<script>x</script>"

    page = render_page(report)

    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
