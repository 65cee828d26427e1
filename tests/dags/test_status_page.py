"""eventlake.orchestration.status_page: the page is rendered from the JSON of `eventlake status
--json`
(no broker, no Spark: a hand-made report), and the app lets no one in without Airflow's
sign-in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from eventlake.orchestration.status_page import render_page, status_app, topic_rows
from eventlake.status.report import absent_topic_line


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
        "absent_topics": [],
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


def test_topics_landed_by_runs_without_a_checkpoint_alone_say_so_as_their_last_batch() -> None:
    report = _report()
    report["checkpoints"][0] |= {"name": "runs without a checkpoint", "without_checkpoint": True}
    report["checkpoints"][0] |= {"last_batch": None, "held_by": None, "stream": False}

    (row,) = topic_rows(report)

    assert (row.landed, row.last_batch, row.held_by) == (
        "20 / 25",
        "no checkpoint",
        "not running",
    )


def test_an_unknown_log_end_makes_the_lag_unknown_not_zero() -> None:
    report = _report()
    report["checkpoints"][0]["partitions"][1] |= {"log_end_offset": None, "lag": None}

    (row,) = topic_rows(report | {"kafka_error": "timed out"})

    assert (row.lag, row.landed) == ("?", "20 / ?")
    assert "Kafka did not answer (timed out)" in render_page(report | {"kafka_error": "timed out"})


def test_the_page_says_which_topic_is_no_longer_on_kafka() -> None:
    page = render_page(_report(absent_topics=["orders"]))

    assert absent_topic_line("orders") in page


def test_every_value_is_escaped() -> None:
    report = _report()
    report["checkpoints"][0]["partitions"][0]["topic"] = "<script>x</script>"

    page = render_page(report)

    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


@pytest.fixture
def signed_out() -> Iterator[TestClient]:
    """The app alone, as Airflow mounts it, with Airflow's auth manager (SimpleAuthManager,
    users must sign in) and no credentials."""
    from airflow.api_fastapi.app import create_auth_manager, purge_cached_app

    create_auth_manager()
    yield TestClient(status_app(), follow_redirects=False)
    purge_cached_app()


def test_a_browser_not_signed_in_is_sent_to_airflows_login(signed_out: TestClient) -> None:
    response = signed_out.get("/?topic=orders")

    assert response.status_code == 307
    assert response.headers["location"].startswith("/auth/login?next=")


def test_the_json_needs_a_signed_in_user(signed_out: TestClient) -> None:
    assert signed_out.get("/status.json").status_code == 401
    bad = signed_out.get("/status.json", headers={"Authorization": "Bearer not-a-jwt"})
    assert bad.status_code in (401, 403)
