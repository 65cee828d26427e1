"""eventlake's status page in a real Airflow (tests/dags/airflow_server.py): the plugin
is loaded through its entry point, ``/eventlake/status.json`` is what ``eventlake
status --json`` computes, and a headless Chromium screenshot of ``/eventlake/``
(results/eventlake-status.png) shows the topic with its lag and quality verdict, read
back with OCR as a person would read it."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import pytest
from pyspark.sql import SparkSession

from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import LocalSettings
from eventlake.spark.rows import local_rows
from eventlake.status.report import warehouse_status
from eventlake.warehouse.names import DQ_RESULTS
from eventlake.warehouse.schemas import DQ_RESULTS_SCHEMA
from tests.dags.airflow_server import AirflowServer, airflow_server  # noqa: F401
from tests.dags.test_ui_screenshot import headless_chromium, text_in_image
from tests.helpers import produce_events

REPO: Final = Path(__file__).resolve().parents[2]
SCREENSHOT: Final = REPO / "results" / "eventlake-status.png"
#: Words and dots only: OCR reads them back without 0/O or 1/l doubts.
TOPIC: Final = "status.page.orders"
LANDED: Final = 40
#: Records produced after the ingest: the topic's lag, a figure OCR cannot mistake.
LAG: Final = 37


@pytest.fixture(scope="module")
def worker_settings(
    airflow_server: AirflowServer,  # noqa: F811
    broker: LocalBroker,
    spark: SparkSession,
    settings: LocalSettings,
) -> LocalSettings:
    """The Airflow deployment's warehouse, holding :data:`TOPIC` landed up to
    :data:`LAG` records behind and one quality run with a failed warning."""
    landed = settings.model_copy(
        update={"warehouse": Path(airflow_server.env["EVENTLAKE_WAREHOUSE"])}
    )
    create_topic(landed, TOPIC, partitions=2)
    produce_events(landed, TOPIC, LANDED)
    run_ingest(spark, landed, IngestRequest(topics=(TOPIC,)))
    produce_events(landed, TOPIC, LAG, prefix="late")
    _one_quality_run(spark, landed)
    return landed


def _one_quality_run(spark: SparkSession, settings: LocalSettings) -> None:
    """Two rows of dq_results as `eventlake check` writes them: one check passed, one
    warning failed (the verdict: warning)."""
    now = datetime.now(UTC)
    rows = [
        {
            "run_id": "run-1",
            "run_time": now,
            "table": "events",
            "topic": TOPIC,
            "check": check,
            "severity": "warning",
            "success": ok,
            "unexpected_sample": [],
        }
        for check, ok in (("row_count", True), ("unique_source_id", False))
    ]
    local_rows(spark, rows, DQ_RESULTS_SCHEMA).write.format("delta").mode("append").save(
        str(settings.table_path(DQ_RESULTS))
    )


def test_the_plugin_adds_the_page_to_airflows_navigation(
    airflow_server: AirflowServer,  # noqa: F811
) -> None:
    plugins = airflow_server.request("GET", "/api/v2/plugins").json()["plugins"]

    (plugin,) = [p for p in plugins if p["name"] == "eventlake_status"]
    assert [v["url_route"] for v in plugin["external_views"]] == ["eventlake-status"]
    assert [a["url_prefix"] for a in plugin["fastapi_apps"]] == ["/eventlake"]


def test_the_navigation_entry_shows_the_page_in_an_iframe(
    airflow_server: AirflowServer,  # noqa: F811
) -> None:
    dom = headless_chromium(f"{airflow_server.url}/plugin/eventlake-status", "--dump-dom")

    frames = re.findall(r"<iframe[^>]*>", dom)
    assert any('src="eventlake/"' in f or "/eventlake/" in f for f in frames), dom[-2000:]


def test_status_json_over_http_is_what_the_status_command_computes(
    airflow_server: AirflowServer,  # noqa: F811
    worker_settings: LocalSettings,
) -> None:
    response = airflow_server.request("GET", f"/eventlake/status.json?topic={TOPIC}")

    assert response.status_code == 200, response.text
    assert response.json() == warehouse_status(worker_settings, topics=(TOPIC,)).to_json()
    (checkpoint,) = response.json()["checkpoints"]
    assert sum(p["lag"] for p in checkpoint["partitions"]) == LAG
    assert response.json()["quality"][TOPIC]["verdict"] == "warning"


def test_a_screenshot_of_the_page_shows_the_topic_its_lag_and_verdict(
    airflow_server: AirflowServer,  # noqa: F811
    worker_settings: LocalSettings,
) -> None:
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    SCREENSHOT.unlink(missing_ok=True)

    headless_chromium(
        f"{airflow_server.url}/eventlake/?topic={TOPIC}", f"--screenshot={SCREENSHOT}"
    )

    text = text_in_image(SCREENSHOT)
    rows = [line for line in text.splitlines() if TOPIC in line]
    assert any(re.search(rf"(?<!\d){LAG}(?!\d)", line) for line in rows), f"OCR:\n{text}"
    assert "WARNING" in text, f"OCR:\n{text}"
