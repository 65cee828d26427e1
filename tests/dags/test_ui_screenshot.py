"""A headless Chromium screenshot of the Airflow UI's DAG list, saved as an artifact in
results/airflow-dags.png (results/ is git-ignored) and read back with OCR (tesseract):
it must show eventlake's four DAGs by name, as a person looking at it would check."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Final

import pytest

from tests.dags.airflow_server import AirflowServer, airflow_server  # noqa: F401

REPO: Final = Path(__file__).resolve().parents[2]
SCREENSHOT: Final = REPO / "results" / "airflow-dags.png"
EVENTLAKE_DAGS: Final = (
    "eventlake_ingest",
    "eventlake_maintenance",
    "eventlake_quality",
    "eventlake_republish",
)


def headless_chromium(url: str, *output: str, timeout: float = 180.0) -> str:
    """Load ``url`` in headless Chromium (a fresh profile, no network chatter, a
    1400x900 window), let the React UI render for 15 s of virtual time, and return
    stdout; ``output`` says what to produce (``--screenshot=<path>``, ``--dump-dom``)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("Debian package `chromium` is missing: run `make setup`")
    with tempfile.TemporaryDirectory(prefix="eventlake-chromium-") as profile:
        completed = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--window-size=1400,900",
                "--virtual-time-budget=15000",
                *output,
                url,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return completed.stdout


@pytest.fixture(scope="module")
def dags_page(airflow_server: AirflowServer) -> str:  # noqa: F811
    """The UI's DAG list page, once the dag-processor has parsed eventlake's DAGs."""
    for dag_id in EVENTLAKE_DAGS:
        airflow_server.wait_for_dag(dag_id)
    return f"{airflow_server.url}/dags"


def text_in_image(image: Path) -> str:
    """The text tesseract (Debian's tesseract-ocr) reads in an image."""
    tesseract = shutil.which("tesseract")
    if tesseract is None:
        pytest.fail("Debian package `tesseract-ocr` is missing: run `make setup`")
    completed = subprocess.run(
        [tesseract, str(image), "stdout"], check=True, capture_output=True, text=True, timeout=120
    )
    return completed.stdout


def test_dag_list_screenshot_shows_the_four_dags_by_name(dags_page: str) -> None:
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    SCREENSHOT.unlink(missing_ok=True)

    headless_chromium(dags_page, f"--screenshot={SCREENSHOT}")

    text = text_in_image(SCREENSHOT)
    shown = {d for d in EVENTLAKE_DAGS if re.search(rf"(?<![A-Za-z]){d}(?![A-Za-z_])", text)}
    assert shown == set(EVENTLAKE_DAGS), f"OCR of {SCREENSHOT}:\n{text}"


def test_dag_list_renders_eventlake_dags_without_login(dags_page: str) -> None:
    dom = headless_chromium(dags_page, "--dump-dom")

    assert all(dag_id in dom for dag_id in EVENTLAKE_DAGS), dom[-2000:]
