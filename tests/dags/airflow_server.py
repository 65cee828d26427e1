"""A real Airflow 3 deployment for tests: ``airflow api-server``, ``airflow scheduler``
(LocalExecutor) and ``airflow dag-processor`` on the project's dags/ folder.

Airflow 3 runs the LocalExecutor on SQLite (``airflow standalone`` does the same), so the
deployment needs no database server: everything lives in a temporary AIRFLOW_HOME. The
API server binds to 127.0.0.1 on a free port; task processes reach it through the
Execution API at ``/execution/``. SimpleAuthManager with all users admin: no login.
Scheduled runs are switched off (``use_job_schedule = False``): only runs triggered by
a test run, so unpausing a DAG starts nothing on its own.

The processes start once per test session, however many test modules use the
``airflow_server`` fixture, and stop at the end of the session. Import the fixture:

    from tests.dags.airflow_server import AirflowServer, airflow_server  # noqa: F401
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from eventlake.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DAGS_FOLDER: Final = REPO / "dags"
AIRFLOW_BIN: Final = Path(sys.executable).parent / "airflow"
#: The components a triggered run needs (no triggerer: no deferrable tasks here).
COMPONENTS: Final = ("api-server", "scheduler", "dag-processor")
START_TIMEOUT: Final = 240.0
_STASH_KEY = pytest.StashKey["AirflowServer"]()


class AirflowServerError(RuntimeError):
    """A component did not start or died; the message carries the tail of its log."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def airflow_environment(home: Path, port: int, settings: Settings) -> dict[str, str]:
    """Environment of every component: a private home and SQLite DB, the project's DAGs,
    LocalExecutor, the API on 127.0.0.1:<port>, shared JWT/secret keys, and the
    eventlake settings of the workers (test broker, a warehouse of the test session)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    base_url = f"http://127.0.0.1:{port}"
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base_url}/execution/",
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "180",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": base_url,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
            "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "240",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "60",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[1]"}),
            "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
            "EVENTLAKE_WAREHOUSE": str(home / "warehouse"),
            "EVENTLAKE_DRIVER_MEMORY": "1g",
            "EVENTLAKE_SHUFFLE_PARTITIONS": "1",
            "PATH": f"{AIRFLOW_BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    return env


@dataclass
class AirflowServer:
    """The running deployment: its URL, home, processes, and a REST client."""

    url: str
    home: Path
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _token: str | None = None

    def log_tail(self, component: str, lines: int = 40) -> str:
        """The last lines of a component's stdout/stderr."""
        path = self.home / f"{component}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        """Raise with the component's log when one of the processes has exited."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AirflowServerError(
                    f"airflow {name} exited with {process.returncode}:\n{self.log_tail(name)}"
                )

    def token(self) -> str:
        """A JWT from SimpleAuthManager (all admins: ``GET /auth/token``, no credentials)."""
        if self._token is None:
            response = httpx.get(f"{self.url}/auth/token", timeout=30)
            response.raise_for_status()
            self._token = str(response.json()["access_token"])
        return self._token

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One call of the REST API (``/api/v2/...``) with the bearer token."""
        return httpx.request(
            method,
            f"{self.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.token()}"},
            timeout=60,
        )

    def wait_until(self, what: str, ready: Callable[[], bool], timeout: float) -> None:
        """Poll ``ready`` every second until it holds; fail with the logs on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                if ready():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        logs = "\n".join(f"--- {name}\n{self.log_tail(name)}" for name in self.processes)
        raise AirflowServerError(f"timed out after {timeout:.0f} s waiting for {what}\n{logs}")

    def wait_for_dag(self, dag_id: str, timeout: float = START_TIMEOUT) -> None:
        """Wait until the dag-processor has parsed ``dag_id`` and the API knows it."""
        self.wait_until(
            f"DAG {dag_id}",
            lambda: self.request("GET", f"/api/v2/dags/{dag_id}").status_code == 200,
            timeout,
        )

    def start(self) -> None:
        """Migrate the metadata DB, start the components, wait until the API answers."""
        subprocess.run(
            [str(AIRFLOW_BIN), "db", "migrate"],
            env=self.env,
            cwd=self.home,
            check=True,
            capture_output=True,
            timeout=600,
        )
        port = self.url.rsplit(":", 1)[1]
        commands = {
            "api-server": ["api-server", "--host", "127.0.0.1", "--port", port, "--workers", "1"],
            "scheduler": ["scheduler"],
            "dag-processor": ["dag-processor"],
        }
        for name in COMPONENTS:
            with (self.home / f"{name}.log").open("wb") as log:
                self.processes[name] = subprocess.Popen(
                    [str(AIRFLOW_BIN), *commands[name]],
                    env=self.env,
                    cwd=self.home,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stop() ends its children
                )
        self.wait_until(
            "the API server",
            lambda: httpx.get(f"{self.url}/api/v2/monitor/health", timeout=5).status_code == 200,
            START_TIMEOUT,
        )

    def stop(self) -> None:
        """SIGTERM each component's process group, then SIGKILL what is left after 30 s."""
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture(scope="session")
def airflow_server(request: pytest.FixtureRequest, settings: Settings) -> AirflowServer:
    """The deployment, started once per session (shared by every module that imports
    this fixture) and stopped, its home deleted, when the session ends."""
    stash = request.config.stash
    if _STASH_KEY not in stash:
        home = Path(tempfile.mkdtemp(prefix="eventlake-airflow-server-"))
        port = free_port()
        server = AirflowServer(
            url=f"http://127.0.0.1:{port}", home=home, env=airflow_environment(home, port, settings)
        )
        stash[_STASH_KEY] = server
        request.config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
        request.config.add_cleanup(server.stop)  # cleanups run last-in first-out
        server.start()
    server = stash[_STASH_KEY]
    server.check_alive()
    return server
