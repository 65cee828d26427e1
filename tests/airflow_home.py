"""A private AIRFLOW_HOME with a SQLite metadata database, for the tests that import Airflow.

Airflow reads its configuration when it is first imported, so the environment is set
when this module is imported: the conftest.py of each test folder whose modules import
airflow (tests/dags, tests/orchestration) imports it first.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

DAGS_FOLDER: Final = Path(__file__).resolve().parents[1] / "dags"

if "airflow.configuration" in sys.modules:  # too late to point Airflow at a private home
    raise pytest.UsageError(
        "Airflow's configuration was loaded before tests/airflow_home.py set AIRFLOW_HOME; "
        "import tests.airflow_home in the conftest.py of every test folder that imports "
        "airflow (or in tests/conftest.py)."
    )

AIRFLOW_HOME: Final = Path(tempfile.mkdtemp(prefix="eventlake-airflow-"))
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
    """Removes the private home at the end of the run (a conftest imports this fixture)."""
    yield AIRFLOW_HOME
    shutil.rmtree(AIRFLOW_HOME, ignore_errors=True)
