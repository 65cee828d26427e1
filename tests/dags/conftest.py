"""Airflow for the DAG tests: a private AIRFLOW_HOME with a SQLite metadata database.

Airflow reads its configuration when it is first imported, so the environment is set
here, at conftest import, before any test module imports airflow.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"

if "airflow.configuration" in sys.modules:  # too late to point Airflow at a private home
    raise pytest.UsageError(
        "Airflow's configuration was loaded before tests/dags/conftest.py set AIRFLOW_HOME; "
        "set AIRFLOW_HOME in tests/conftest.py if other tests import airflow."
    )

AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="eventlake-airflow-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
)


@pytest.fixture(scope="session", autouse=True)
def _airflow_home() -> Iterator[Path]:
    yield AIRFLOW_HOME
    shutil.rmtree(AIRFLOW_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """Airflow's metadata tables, created once (what `airflow db migrate` does on a new DB)."""
    from airflow.utils import db

    db.initdb()
