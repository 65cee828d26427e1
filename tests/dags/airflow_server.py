"""A real Airflow 3 deployment for tests (:mod:`eventlake.local.airflow`): api-server,
scheduler (LocalExecutor on SQLite) and dag-processor on the project's dags/ folder, in
a temporary AIRFLOW_HOME, the API on a free port of 127.0.0.1. Only runs a test
triggers happen.

The processes start once per test session, however many test modules use the
``airflow_server`` fixture, and stop at the end of the session. Import the fixture:

    from tests.dags.airflow_server import AirflowServer, airflow_server  # noqa: F401
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from eventlake.core.settings import Settings
from eventlake.local.airflow import LocalAirflow, free_port

AirflowServer = LocalAirflow
_STASH_KEY = pytest.StashKey[LocalAirflow]()


@pytest.fixture(scope="session")
def airflow_server(request: pytest.FixtureRequest, settings: Settings) -> LocalAirflow:
    """The deployment, started once per session (shared by every module that imports
    this fixture) and stopped, its home deleted, when the session ends. Its workers use
    the test broker and a warehouse of their own, and their jobs' drivers serve the
    Spark UI on 127.0.0.1:<``EVENTLAKE_SPARK_UI_PORT`` of ``env``> (a test reads the
    driver's environment page there)."""
    stash = request.config.stash
    if _STASH_KEY not in stash:
        home = Path(tempfile.mkdtemp(prefix="eventlake-airflow-server-"))
        worker_settings = settings.model_copy(
            update={"warehouse": home / "warehouse", "spark_master": "local[1]"}
        )
        extra = {
            "EVENTLAKE_SPARK_UI_PORT": str(free_port()),
            "SPARK_LOCAL_IP": "127.0.0.1",  # where the driver's UI binds
            # Task logs with spark-submit's command line and output, as a deployment has them.
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        }
        server = LocalAirflow.create(worker_settings, home=home, port=free_port(), extra_env=extra)
        stash[_STASH_KEY] = server
        request.config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
        request.config.add_cleanup(server.stop)  # cleanups run last-in first-out
        server.start()
    server = stash[_STASH_KEY]
    server.check_alive()
    return server
