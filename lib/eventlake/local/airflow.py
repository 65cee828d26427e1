"""A local Airflow 3 deployment on the project's DAGs, for `make demo` and the tests.

``airflow api-server``, ``airflow scheduler`` (LocalExecutor) and ``airflow
dag-processor`` run from the venv with a SQLite metadata database in one folder (what
``airflow standalone`` does, minus the triggerer: no task here defers), and the
triggerer too when a Kafka DAG is scheduled on events (its topics' watchers run there,
see :func:`event_driven`). The local cluster (:mod:`eventlake.local.cluster`) passes a
PostgreSQL ``database_url`` and runs every component (``components``). The API server
binds to 127.0.0.1; SimpleAuthManager with every user admin, so the UI needs no login:
a local demo, not a deployment (docker-compose is that). The components' pids are kept
in ``<home>/pids.json`` so that another process (``eventlake airflow stop``) can stop them.

Example:
    >>> airflow = LocalAirflow.create(load_settings(), home=Path("var/airflow"), port=8080)
    >>> airflow.start()
    >>> run_id = airflow.trigger("eventlake_ingest", {"topics": ["demo.orders"]})
    >>> airflow.wait_for_run("eventlake_ingest", run_id)
    'success'
    >>> airflow.stop()
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from eventlake.core.errors import EventlakeError
from eventlake.core.settings import PROJECT_ROOT, Settings
from eventlake.local import processes
from eventlake.local.processes import free_port as free_port  # re-exported for the tests

DAGS_FOLDER: Final = PROJECT_ROOT / "dags"
AIRFLOW_BIN: Final = Path(sys.executable).parent / "airflow"
#: The components of the default deployment (the demo's and the tests').
COMPONENTS: Final = ("api-server", "scheduler", "dag-processor")
#: Every component there is; the local cluster runs them all.
ALL_COMPONENTS: Final = ("api-server", "scheduler", "dag-processor", "triggerer")
START_TIMEOUT: Final = 240.0
PIDS_FILE: Final = "pids.json"
#: Run states after which a DAG run changes no more.
FINISHED_STATES: Final = frozenset({"success", "failed"})


def event_driven(settings: Settings) -> bool:
    """Whether a Kafka DAG is scheduled on the arrival of records (``events`` or ``both``):
    the deployment then needs a triggerer, and a scheduler that creates runs.

    Example:
        >>> event_driven(load_settings(ingest_schedule="events"))
        True
    """
    return settings.ingest_schedule != "schedule" or settings.republish_schedule != "schedule"


def default_components(settings: Settings) -> tuple[str, ...]:
    """The components of a deployment for ``settings``: :data:`COMPONENTS`, with the
    triggerer when :func:`event_driven`.

    Example:
        >>> default_components(load_settings(ingest_schedule="both"))[-1]
        'triggerer'
    """
    return (*COMPONENTS, "triggerer") if event_driven(settings) else COMPONENTS


class LocalAirflowError(EventlakeError, RuntimeError):
    """A component did not start, died, or a run did not finish; the message has the log."""


def airflow_environment(
    home: Path,
    port: int,
    settings: Settings,
    extra: Mapping[str, str] | None = None,
    *,
    database_url: str | None = None,
) -> dict[str, str]:
    """Environment of every component: a private home and metadata DB (SQLite in the
    home unless ``database_url`` names another, e.g. PostgreSQL), the project's DAGs,
    LocalExecutor, the API on 127.0.0.1:<port>, fresh JWT/secret keys, Spark's address
    (``SPARK_LOCAL_IP``) on 127.0.0.1, spark_default on
    the settings' master (with the settings' ``spark_auth_secret`` as its password), and
    the eventlake settings the workers pass to their jobs (the same master, so that the
    planned Spark conf fits it).

    Scheduled runs are off (``use_job_schedule = False``): only triggered runs happen,
    so unpausing a DAG starts nothing on its own; unless a Kafka DAG is scheduled on
    events (:func:`event_driven`): then the scheduler creates the runs of unpaused DAGs,
    those the arrivals start and the cron's alike.

    Example:
        >>> env = airflow_environment(Path("/tmp/af"), 8080, load_settings())
        >>> env["AIRFLOW__CORE__EXECUTOR"]
        'LocalExecutor'
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    base_url = f"http://127.0.0.1:{port}"
    spark_connection = {"conn_type": "spark", "host": settings.spark_master}
    if settings.spark_auth_secret is not None:
        spark_connection["password"] = settings.spark_auth_secret.get_secret_value()
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url
            or f"sqlite:///{home / 'airflow.db'}",
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
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": str(event_driven(settings)),
            "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "240",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "60",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            # INFO: a task's log holds what its job printed (the ingest summary, a
            # dry run's commands); the components' own lines go to files in the home.
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(spark_connection),
            # The tasks' spark-submit JVMs (a local master, or the local cluster's, both on
            # this machine) resolve their address on 127.0.0.1, not on the host's first
            # other interface (with a warning in every task log).
            "SPARK_LOCAL_IP": "127.0.0.1",
            "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
            "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
            "EVENTLAKE_DRIVER_MEMORY": settings.driver_memory,
            "EVENTLAKE_QUALITY_DRIVER_MEMORY": settings.quality_driver_memory,
            "EVENTLAKE_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions),
            "EVENTLAKE_SPARK_MASTER": settings.spark_master,
            "EVENTLAKE_EXECUTOR_MEMORY": settings.executor_memory,
            "EVENTLAKE_EXECUTOR_CORES": str(settings.executor_cores),
            # Read where the DAGs are parsed: a DAG's schedule and its topics' watchers.
            "EVENTLAKE_INGEST_SCHEDULE": settings.ingest_schedule,
            "EVENTLAKE_REPUBLISH_SCHEDULE": settings.republish_schedule,
            "EVENTLAKE_ARRIVAL_POLL_SECONDS": str(settings.arrival_poll_seconds),
            "PATH": f"{AIRFLOW_BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    if settings.cores_max is not None:
        env["EVENTLAKE_CORES_MAX"] = str(settings.cores_max)
    env.update(extra or {})
    return env


@dataclass
class LocalAirflow:
    """The deployment: its URL, home, environment, processes, and a REST client."""

    url: str
    home: Path
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    components: tuple[str, ...] = COMPONENTS
    _token: str | None = None

    @classmethod
    def create(
        cls,
        settings: Settings,
        *,
        home: Path,
        port: int,
        extra_env: Mapping[str, str] | None = None,
        database_url: str | None = None,
        components: tuple[str, ...] | None = None,
    ) -> LocalAirflow:
        """A deployment in ``home`` serving on 127.0.0.1:``port`` (not started yet), on
        SQLite in ``home`` unless ``database_url`` names the metadata DB, running
        ``components`` (of :data:`ALL_COMPONENTS`; by default
        :func:`default_components`).

        Example:
            >>> LocalAirflow.create(settings, home=Path("var/af"), port=8080).components
            ('api-server', 'scheduler', 'dag-processor')
        """
        components = default_components(settings) if components is None else components
        unknown = set(components) - set(ALL_COMPONENTS)
        if unknown or "api-server" not in components:
            raise ValueError(f"components must include api-server, among {ALL_COMPONENTS}")
        home.mkdir(parents=True, exist_ok=True)
        env = airflow_environment(home, port, settings, extra_env, database_url=database_url)
        return cls(url=f"http://127.0.0.1:{port}", home=home, env=env, components=components)

    def log_tail(self, component: str, lines: int = 40) -> str:
        """The last lines of a component's stdout/stderr."""
        path = self.home / f"{component}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        """Raise with the component's log when one of the processes has exited."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise LocalAirflowError(
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
        raise LocalAirflowError(f"timed out after {timeout:.0f} s waiting for {what}\n{logs}")

    def wait_for_dag(self, dag_id: str, timeout: float = START_TIMEOUT) -> None:
        """Wait until the dag-processor has parsed ``dag_id`` and the API knows it."""
        self.wait_until(
            f"DAG {dag_id}",
            lambda: self.request("GET", f"/api/v2/dags/{dag_id}").status_code == 200,
            timeout,
        )

    def unpause(self, dag_id: str) -> None:
        """Unpause a DAG (triggered runs of a paused DAG stay queued)."""
        response = self.request("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
        response.raise_for_status()

    def trigger(self, dag_id: str, conf: Mapping[str, Any] | None = None) -> str:
        """Trigger a run with ``conf`` (as the UI's trigger form does); its run id."""
        response = self.request(
            "POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf or {}}
        )
        if response.status_code >= 400:
            raise LocalAirflowError(f"trigger of {dag_id} refused: {response.text}")
        return str(response.json()["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str) -> str:
        """The state of a DAG run (queued, running, success, failed)."""
        response = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
        response.raise_for_status()
        return str(response.json()["state"])

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 900) -> str:
        """Wait until a run has finished; its final state."""
        self.wait_until(
            f"run {run_id} of {dag_id}",
            lambda: self.run_state(dag_id, run_id) in FINISHED_STATES,
            timeout,
        )
        return self.run_state(dag_id, run_id)

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
            # Task logs are files in this home, which the api-server reads itself: no
            # log server (it would listen on every interface, on fixed ports).
            "scheduler": ["scheduler", "--skip-serve-logs"],
            "dag-processor": ["dag-processor"],
            "triggerer": ["triggerer", "--skip-serve-logs"],
        }
        for name in self.components:
            with (self.home / f"{name}.log").open("wb") as log:
                self.processes[name] = subprocess.Popen(
                    [str(AIRFLOW_BIN), *commands[name]],
                    env=self.env,
                    cwd=self.home,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stop() ends its children
                )
        processes.write_records(
            self.home / PIDS_FILE,
            {name: processes.Recorded.of(process.pid) for name, process in self.processes.items()},
        )
        self.wait_until(
            "the API server",
            lambda: httpx.get(f"{self.url}/api/v2/monitor/health", timeout=5).status_code == 200,
            START_TIMEOUT,
        )

    def stop(self) -> None:
        """SIGTERM each component's process group, then SIGKILL what is left after 30 s."""
        # Our own children: poll() reaps them (a zombie would still answer a signal).
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
        (self.home / PIDS_FILE).unlink(missing_ok=True)


def stop_local_airflow(home: Path) -> bool:
    """Stop the deployment whose pids ``home`` records (started by another process).

    Returns False when none was running.

    Example:
        >>> stop_local_airflow(Path("var/airflow"))
        False
    """
    pids_file = home / PIDS_FILE
    if not pids_file.exists():
        return False
    running = list(processes.running_records(pids_file, group=True).values())
    processes.stop(running, group=True)
    pids_file.unlink(missing_ok=True)
    return bool(running)
