"""A Spark standalone cluster on this machine: one master and N workers, each its own JVM.

They run ``spark-class`` from the installed pyspark with the classes docker-compose.yml
starts (``org.apache.spark.deploy.master.Master`` / ``worker.Worker``), on 127.0.0.1
only (``SPARK_LOCAL_IP``, ``--host``), with their logs, work dirs and pids under
``<cluster_dir>/spark``. Each process has its own session, so stopping a worker's
process group also ends the executors it launched.

Their RPC is authenticated and encrypted (:mod:`eventlake.spark.auth`) unless
``spark_authenticate`` is off: the daemons read the secret from their own
``spark-defaults.conf`` (``<cluster_dir>/spark/conf``, 0600); the secret is the settings'
``spark_auth_secret`` or, without one, generated at the first start into
``<cluster_dir>/spark/auth-secret`` (0600), which drivers on this cluster need too.

Example:
    >>> spark = SparkStandalone(load_local_settings())
    >>> spark.start()
    >>> spark.master_json()["aliveworkers"]
    2
    >>> spark.stop()
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import time
from pathlib import Path
from typing import Any, Final

import httpx
from pydantic import SecretStr

from eventlake.core.errors import EventlakeError
from eventlake.local import processes
from eventlake.local.processes import ComponentStatus, port_in_use
from eventlake.local.settings import LocalSettings
from eventlake.spark.auth import write_daemon_conf
from eventlake.storage.files import write_atomically

MASTER_CLASS: Final = "org.apache.spark.deploy.master.Master"
WORKER_CLASS: Final = "org.apache.spark.deploy.worker.Worker"
MASTER: Final = "spark-master"
PIDS_FILE: Final = "pids.json"


class SparkStandaloneError(EventlakeError, RuntimeError):
    """The master or a worker did not start; the message has its log."""


def spark_home() -> Path:
    """The installed pyspark package, which is a Spark distribution (bin/, jars/).

    Example:
        >>> (spark_home() / "bin" / "spark-class").exists()
        True
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise SparkStandaloneError("pyspark is not installed in this Python: run `make setup`.")
    return Path(next(iter(spec.submodule_search_locations)))


def master_url(settings: LocalSettings) -> str:
    """The local master's URL, what jobs on the cluster get as ``--master``.

    Example:
        >>> master_url(load_local_settings(spark_master_port=7077))
        'spark://127.0.0.1:7077'
    """
    return f"spark://127.0.0.1:{settings.spark_master_port}"


def worker_name(number: int) -> str:
    """``spark-worker-<n>``, the name of the n-th worker (from 1) in pids and logs."""
    return f"spark-worker-{number}"


def worker_ui_port(settings: LocalSettings, number: int) -> int:
    """The web UI port of the n-th worker (from 1): consecutive from the first's.

    Example:
        >>> worker_ui_port(load_local_settings(spark_worker_ui_port=8082), 2)
        8083
    """
    return settings.spark_worker_ui_port + number - 1


def master_command(settings: LocalSettings) -> list[str]:
    """The master's command line, as docker-compose.yml's but on 127.0.0.1.

    Example:
        >>> master_command(load_local_settings())[1:3]
        ['org.apache.spark.deploy.master.Master', '--host']
    """
    return [
        str(spark_home() / "bin" / "spark-class"),
        MASTER_CLASS,
        "--host",
        "127.0.0.1",
        "--port",
        str(settings.spark_master_port),
        "--webui-port",
        str(settings.spark_master_ui_port),
    ]


def worker_command(settings: LocalSettings, number: int, work_dir: Path) -> list[str]:
    """The n-th worker's command line: its cores, memory, UI port and work dir.

    Example:
        >>> worker_command(load_local_settings(), 1, Path("/w"))[-1]
        'spark://127.0.0.1:7077'
    """
    return [
        str(spark_home() / "bin" / "spark-class"),
        WORKER_CLASS,
        "--host",
        "127.0.0.1",
        "--cores",
        str(settings.spark_worker_cores),
        "--memory",
        settings.spark_worker_memory,
        "--webui-port",
        str(worker_ui_port(settings, number)),
        "--work-dir",
        str(work_dir),
        master_url(settings),
    ]


def daemon_environment(
    base: dict[str, str] | None = None, conf_dir: Path | None = None
) -> dict[str, str]:
    """The environment of the master and workers (and so of the executors a worker
    launches): everything bound to 127.0.0.1, the master's REST submission server off
    (jobs are submitted in client mode; it would take port 6066 on every interface),
    and ``SPARK_CONF_DIR`` on ``conf_dir`` when one holds their ``spark-defaults.conf``.

    Example:
        >>> daemon_environment({})["SPARK_LOCAL_IP"]
        '127.0.0.1'
    """
    env = dict(os.environ if base is None else base)
    env.update(
        {
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            # The daemons only schedule; executors get their own memory.
            "SPARK_DAEMON_MEMORY": "512m",
        }
    )
    if conf_dir is not None:
        env["SPARK_CONF_DIR"] = str(conf_dir)
    # Set by a spark-submit driver for its own JVM; not for daemons. A secret in the
    # environment is for drivers: the daemons read theirs from conf_dir.
    env.pop("SPARK_SUBMIT_OPTS", None)
    env.pop("EVENTLAKE_SPARK_AUTH_SECRET", None)
    return env


def get_json(url: str, timeout: float = 2.0) -> Any:
    """The JSON at ``url``, or None when nothing answers there (yet)."""
    try:
        response = httpx.get(url, timeout=timeout)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


class SparkStandalone:
    """Start, stop and query the local master and workers."""

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        self.home = settings.cluster_dir / "spark"
        self.pids_file = self.home / PIDS_FILE
        self.conf_dir = self.home / "conf"
        self.secret_file = self.home / "auth-secret"
        self.master_ui = f"http://127.0.0.1:{settings.spark_master_ui_port}"
        self.url = master_url(settings)

    def names(self) -> list[str]:
        """The processes of the cluster: the master, then the workers."""
        return [MASTER] + [worker_name(n) for n in range(1, self.settings.spark_workers + 1)]

    def secret(self) -> SecretStr | None:
        """The cluster's shared secret (None with ``spark_authenticate`` off): the
        settings' ``spark_auth_secret``, else the one in :attr:`secret_file`, made at
        the first call (32 random bytes, hex) and kept for later starts."""
        if not self.settings.spark_authenticate:
            return None
        if self.settings.spark_auth_secret is not None:
            return self.settings.spark_auth_secret
        if not self.secret_file.exists():
            write_atomically(self.secret_file, secrets.token_hex(32) + "\n", mode=0o600)
        return SecretStr(self.secret_file.read_text().strip())

    def log_file(self, name: str) -> Path:
        return self.home / f"{name}.log"

    def work_dir(self, number: int) -> Path:
        """The n-th worker's work dir: one folder per application and executor."""
        return self.home / "work" / worker_name(number)

    def worker_ui(self, number: int) -> str:
        return f"http://127.0.0.1:{worker_ui_port(self.settings, number)}"

    def pids(self) -> dict[str, int]:
        """The recorded processes that still run, by name."""
        return processes.running_records(self.pids_file)

    def master_json(self, timeout: float = 2.0) -> Any:
        """The master's status (``/json/``: workers, activeapps, completedapps), or None."""
        return get_json(f"{self.master_ui}/json/", timeout)

    def worker_json(self, number: int, timeout: float = 2.0) -> Any:
        """The n-th worker's status (``/json/``: executors, finishedexecutors), or None."""
        return get_json(f"{self.worker_ui(number)}/json/", timeout)

    def ports(self) -> list[int]:
        """The fixed ports the cluster binds (workers' RPC ports are picked at start)."""
        numbers = range(1, self.settings.spark_workers + 1)
        workers = [worker_ui_port(self.settings, n) for n in numbers]
        return [self.settings.spark_master_port, self.settings.spark_master_ui_port, *workers]

    def status(self) -> list[ComponentStatus]:
        """One line per process: alive, and whether its web UI's JSON answers."""
        pids = self.pids()
        master = self.master_json()
        alive_workers = 0 if master is None else int(master.get("aliveworkers", 0))
        statuses = [
            ComponentStatus(
                MASTER,
                pids.get(MASTER),
                f"{self.url} (UI {self.master_ui})",
                master is not None,
                f"{alive_workers} alive worker(s)" if master is not None else "",
            )
        ]
        for number in range(1, self.settings.spark_workers + 1):
            name = worker_name(number)
            worker = self.worker_json(number, timeout=1.0) if name in pids else None
            running = 0 if worker is None else len(worker.get("executors", []))
            statuses.append(
                ComponentStatus(
                    name,
                    pids.get(name),
                    self.worker_ui(number),
                    worker is not None,
                    f"{running} executor(s) running" if worker is not None else "",
                )
            )
        return statuses

    def start(self, timeout: float = 120.0) -> None:
        """Start the master and the workers unless they run; wait until the master lists
        every worker alive."""
        running = self.pids()
        if set(running) == set(self.names()):
            self._wait_for_workers(timeout)
            return
        if running:
            raise SparkStandaloneError(
                f"Part of the Spark cluster runs ({', '.join(sorted(running))}): "
                "stop it first (eventlake cluster stop)."
            )
        taken = [port for port in self.ports() if port_in_use(port)]
        if taken:
            raise SparkStandaloneError(
                f"Port(s) {', '.join(map(str, taken))} on 127.0.0.1 are taken, so the Spark "
                "cluster cannot start. Stop what holds them or pick others with "
                "EVENTLAKE_SPARK_MASTER_PORT / EVENTLAKE_SPARK_MASTER_UI_PORT / "
                "EVENTLAKE_SPARK_WORKER_UI_PORT."
            )
        self.home.mkdir(parents=True, exist_ok=True)
        secret = self.secret()
        if secret is None:
            (self.conf_dir / "spark-defaults.conf").unlink(missing_ok=True)
        else:
            write_daemon_conf(self.conf_dir, secret)
        env = daemon_environment(conf_dir=self.conf_dir)
        pids: dict[str, int] = {}
        try:
            pids[MASTER] = processes.spawn(
                master_command(self.settings), log=self.log_file(MASTER), env=env, cwd=self.home
            ).pid
            self._write_pids(pids)
            self._wait(MASTER, pids[MASTER], lambda: self.master_json() is not None, timeout)
            for number in range(1, self.settings.spark_workers + 1):
                work_dir = self.work_dir(number)
                work_dir.mkdir(parents=True, exist_ok=True)
                command = worker_command(self.settings, number, work_dir)
                name = worker_name(number)
                pids[name] = processes.spawn(
                    command, log=self.log_file(name), env=env, cwd=self.home
                ).pid
                self._write_pids(pids)
            self._wait_for_workers(timeout)
        except BaseException:
            self.stop()
            raise

    def _write_pids(self, pids: dict[str, int]) -> None:
        processes.write_records(
            self.pids_file, {name: processes.Recorded.of(pid) for name, pid in pids.items()}
        )

    def _wait(self, name: str, pid: int, ready: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not processes.alive(pid):
                raise SparkStandaloneError(
                    f"{name} exited while starting; last lines of {self.log_file(name)}:\n"
                    f"{processes.log_tail(self.log_file(name))}"
                )
            if ready():
                return
            time.sleep(0.5)
        raise SparkStandaloneError(
            f"{name} did not answer within {timeout:.0f} s; last lines of "
            f"{self.log_file(name)}:\n{processes.log_tail(self.log_file(name))}"
        )

    def _wait_for_workers(self, timeout: float) -> None:
        wanted = self.settings.spark_workers

        def all_alive() -> bool:
            master = self.master_json()
            return master is not None and int(master.get("aliveworkers", 0)) >= wanted

        pids = self.pids()
        deadline = time.monotonic() + timeout
        while not all_alive():
            for name in self.names():
                if name not in pids:
                    raise SparkStandaloneError(
                        f"{name} is not running; last lines of {self.log_file(name)}:\n"
                        f"{processes.log_tail(self.log_file(name))}"
                    )
            if time.monotonic() > deadline:
                raise SparkStandaloneError(
                    f"the master did not list {wanted} alive workers within {timeout:.0f} s; "
                    f"see the logs in {self.home}"
                )
            time.sleep(0.5)
            pids = self.pids()

    def stop(self, timeout: float = 30.0) -> bool:
        """SIGTERM each process group (workers first: their executors end with them),
        SIGKILL what is left after ``timeout``. False when nothing was running."""
        pids = self.pids()
        workers = [pid for name, pid in pids.items() if name != MASTER]
        processes.stop(workers, group=True, timeout=timeout)
        if MASTER in pids:
            processes.stop([pids[MASTER]], group=True, timeout=timeout)
        self.pids_file.unlink(missing_ok=True)
        return bool(pids)
