"""The local cluster: the project's platform as separate processes on 127.0.0.1.

* the Kafka broker (:mod:`eventlake.local.broker`, the same one ``make demo`` uses);
* with ``cluster_object_store``, the local S3 server (:mod:`eventlake.local.s3_server`)
  holding the warehouse, which Airflow's tasks reach through the ``aws_default``
  connection and the executors through their driver's S3A settings;
* PostgreSQL (:mod:`eventlake.local.postgres`), Airflow's metadata database and, in a
  database of its own (``metastore``, its own user), the catalog of
* a Hive Metastore (:mod:`eventlake.local.metastore`) on 127.0.0.1:``cluster_metastore_port``,
  where the DAGs' jobs register the tables by name (``EVENTLAKE_METASTORE_URI``);
* a Spark standalone master and workers, each its own JVM
  (:mod:`eventlake.local.spark_standalone`);
* Airflow (:mod:`eventlake.local.airflow`): api-server, scheduler, dag-processor and
  triggerer on that PostgreSQL, its ``spark_default`` connection on the master (the
  cluster's RPC secret as its password), so that every DAG's spark-submit runs its
  executors on the workers.

``eventlake cluster start`` starts what is not running (in that order), ``stop`` stops
everything (the reverse order; SIGTERM, then SIGKILL), ``status`` says what runs. The
ports are :class:`~eventlake.local.settings.LocalSettings` fields (``EVENTLAKE_*``), the
data, logs and pids are under ``cluster_dir`` (the broker's under ``broker_dir``), so
that another process can stop or query the cluster.

Example:
    >>> cluster = LocalCluster(load_local_settings())
    >>> cluster.start()
    >>> run_id = cluster.airflow_client().trigger("eventlake_ingest")
    >>> cluster.stop()
    ['airflow', 'spark', 'metastore', 'postgres', 'broker']

"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Final

import httpx
from pydantic import SecretStr

from eventlake.core.errors import EventlakeError
from eventlake.core.locations import Location
from eventlake.local import processes
from eventlake.local.airflow import ALL_COMPONENTS, PIDS_FILE, LocalAirflow, stop_local_airflow
from eventlake.local.broker import LocalBroker
from eventlake.local.metastore import LocalMetastore
from eventlake.local.postgres import METASTORE_USER, LocalPostgres
from eventlake.local.processes import ComponentStatus, port_in_use
from eventlake.local.s3_server import LocalS3Server
from eventlake.local.settings import LocalSettings
from eventlake.local.spark_standalone import SparkStandalone, master_url
from eventlake.storage.store import on_object_store

#: The parts of the cluster in start order; stop goes the other way.
PARTS: Final = ("broker", "object-store", "postgres", "metastore", "spark", "airflow")
#: The warehouse of a cluster with an object store, unless the settings name one on S3.
CLUSTER_WAREHOUSE: Final = "s3a://eventlake/warehouse"


class ClusterError(EventlakeError, RuntimeError):
    """A part of the cluster did not start; the message says which and where its log is."""


class ClusterRefused(ClusterError):
    """The cluster cannot start as configured (a port is taken); nothing was started."""


def cluster_settings(settings: LocalSettings) -> LocalSettings:
    """``settings`` with the local master as ``spark_master``, the cluster's metastore
    as ``metastore_uri`` (its folder, port and PostgreSQL database as the ``metastore_*``
    of the service; the password is read at its start), and with
    ``cluster_object_store`` the local S3 server as the warehouse's store: what the
    cluster's Airflow workers plan their jobs with.

    Example:
        >>> cluster_settings(load_local_settings(spark_master_port=7077)).spark_master
        'spark://127.0.0.1:7077'
        >>> cluster_settings(load_local_settings()).metastore_uri
        'thrift://127.0.0.1:9084'
    """
    update: dict[str, object] = {
        "spark_master": master_url(settings),
        "metastore_uri": f"thrift://127.0.0.1:{settings.cluster_metastore_port}",
        "metastore_dir": settings.cluster_dir / "metastore",
        "metastore_port": settings.cluster_metastore_port,
        "metastore_host": "127.0.0.1",
        "metastore_database_url": LocalPostgres(settings).metastore_jdbc_url(),
        "metastore_database_user": METASTORE_USER,
    }
    if settings.cluster_object_store:
        update.update(dict(LocalS3Server(settings).connection()))
        if on_object_store(settings.warehouse) is None:
            update["warehouse"] = Location.of(CLUSTER_WAREHOUSE)
    return settings.model_copy(update=update)


class LocalCluster:
    """Start, stop and query the whole local cluster.

    ``airflow_env`` adds to the Airflow workers' environment (the DAGs' settings,
    ``EVENTLAKE_STATE_TOPICS``...); by default they get this process's ``EVENTLAKE_*``.
    """

    def __init__(
        self, settings: LocalSettings, *, airflow_env: Mapping[str, str] | None = None
    ) -> None:
        self.settings = cluster_settings(settings)
        self.broker = LocalBroker(self.settings)
        self.object_store = LocalS3Server(self.settings)
        self.postgres = LocalPostgres(self.settings)
        self.metastore = LocalMetastore(self.settings)
        self.spark = SparkStandalone(self.settings)
        self.airflow_home = self.settings.cluster_dir / "airflow"
        self.airflow_port = self.settings.cluster_airflow_port
        self.airflow_env = dict(airflow_env or {})

    # -- queries ---------------------------------------------------------------------------

    @property
    def parts(self) -> tuple[str, ...]:
        """This cluster's parts in start order (the object store only when asked for)."""
        wanted = self.settings.cluster_object_store
        return tuple(part for part in PARTS if wanted or part != "object-store")

    def airflow_pids(self) -> dict[str, int]:
        """The Airflow components recorded in its home that are still alive."""
        return processes.running_records(self.airflow_home / PIDS_FILE, group=True)

    def airflow_client(self) -> LocalAirflow:
        """A REST client of the cluster's Airflow (running, perhaps started elsewhere)."""
        return LocalAirflow(
            url=f"http://127.0.0.1:{self.airflow_port}", home=self.airflow_home, env={}
        )

    def airflow_health(self) -> dict[str, str] | None:
        """Each Airflow component's health as its API reports it, or None."""
        try:
            response = httpx.get(
                f"http://127.0.0.1:{self.airflow_port}/api/v2/monitor/health", timeout=5
            )
            if response.status_code != 200:
                return None
            return {
                name: str(part.get("status"))
                for name, part in response.json().items()
                if isinstance(part, dict)
            }
        except (httpx.HTTPError, ValueError):
            return None

    def status(self) -> list[ComponentStatus]:
        """One entry per process of the cluster, in start order."""
        broker = self.broker.status()
        statuses = [
            ComponentStatus(
                "broker",
                broker.pid,
                broker.bootstrap_servers,
                broker.running and self.broker.answers_metadata(timeout=2.0),
            ),
            *(
                [
                    ComponentStatus(
                        "object-store",
                        self.object_store.pid(),
                        self.object_store.endpoint,
                        self.object_store.answers(),
                    )
                ]
                if "object-store" in self.parts
                else []
            ),
            self.postgres.status(),
            ComponentStatus(
                "metastore",
                self.metastore.pid(),
                self.metastore.uri,
                self.metastore.pid() is not None and self.metastore.answers(),
            ),
            *self.spark.status(),
        ]
        pids = self.airflow_pids()
        health = self.airflow_health() if pids else None
        address = f"http://127.0.0.1:{self.airflow_port}"
        for name in ALL_COMPONENTS:
            key = name.replace("-", "_")
            state = (health or {}).get(key, "healthy" if name == "api-server" else "unknown")
            statuses.append(
                ComponentStatus(
                    f"airflow {name}",
                    pids.get(name),
                    address,
                    health is not None and state == "healthy",
                    state if health is not None else "",
                )
            )
        return statuses

    def running_parts(self) -> set[str]:
        """The parts with at least one live process."""
        running = set()
        if self.broker.pid() is not None:
            running.add("broker")
        if "object-store" in self.parts and self.object_store.pid() is not None:
            running.add("object-store")
        if self.postgres.pid() is not None:
            running.add("postgres")
        if self.metastore.pid() is not None:
            running.add("metastore")
        if self.spark.pids():
            running.add("spark")
        if self.airflow_pids():
            running.add("airflow")
        return running

    def ports(self) -> dict[str, list[int]]:
        """The fixed ports of each part, all on 127.0.0.1."""
        return {
            "broker": [self.settings.broker_port, self.settings.controller_port],
            **(
                {"object-store": [self.settings.s3_server_port]}
                if "object-store" in self.parts
                else {}
            ),
            "postgres": [self.settings.postgres_port],
            "metastore": [self.settings.metastore_port],
            "spark": self.spark.ports(),
            "airflow": [self.airflow_port],
        }

    # -- start and stop --------------------------------------------------------------------

    def start(self, timeout: float = 240.0, say: Callable[[str], None] = print) -> None:
        """Start every part that is not running, in order; wait until each answers.

        Raises :class:`ClusterRefused` (nothing started) when a port of a part to start
        is taken, :class:`ClusterError` when a part fails to start (the parts this call
        started are stopped again).
        """
        running = self.running_parts()
        taken = {
            port: part
            for part, ports in self.ports().items()
            if part not in running
            for port in ports
            if port_in_use(port)
        }
        if taken:
            listed = ", ".join(f"{port} ({part})" for port, part in sorted(taken.items()))
            raise ClusterRefused(
                f"Port(s) {listed} on 127.0.0.1 are taken by other processes. Stop them, or "
                "pick other ports (EVENTLAKE_BROKER_PORT, EVENTLAKE_POSTGRES_PORT, "
                "EVENTLAKE_CLUSTER_METASTORE_PORT, "
                "EVENTLAKE_SPARK_MASTER_PORT, EVENTLAKE_CLUSTER_AIRFLOW_PORT, ...)."
            )
        started: list[str] = []
        try:
            for part in self.parts:
                if part in running:
                    say(f"{part}: already running")
                    continue
                say(f"{part}: starting")
                started.append(part)
                self._start_part(part, timeout)
        except Exception as error:
            say(f"{part}: failed; stopping what this start started ({', '.join(started)})")
            self._stop_parts(reversed(started))
            raise ClusterError(f"{part} did not start: {error}") from error

    def _start_part(self, part: str, timeout: float) -> None:
        if part == "broker":
            self.broker.start(timeout=timeout)
        elif part == "object-store":
            self._start_object_store(timeout)
        elif part == "postgres":
            self.postgres.start(timeout=timeout)
        elif part == "metastore":
            # Its database password (made by the PostgreSQL start) only now: into the
            # service's 0600 hive-site.xml, never on a command line.
            password = SecretStr(self.postgres.metastore_password())
            update = {"metastore_database_password": password}
            LocalMetastore(self.settings.model_copy(update=update)).start(timeout=timeout)
        elif part == "spark":
            self.spark.start(timeout=timeout)
        else:
            # Drivers authenticate with the daemons' secret: the connection's password.
            secret = self.spark.secret()
            airflow = LocalAirflow.create(
                self.settings.model_copy(update={"spark_auth_secret": secret}),
                home=self.airflow_home,
                port=self.airflow_port,
                extra_env={
                    **self._object_store_connection(),
                    # The jobs register their tables by name in the cluster's metastore.
                    "EVENTLAKE_METASTORE_URI": self.metastore.uri,
                    "EVENTLAKE_METASTORE_SCHEMA": self.settings.metastore_schema,
                    **self.airflow_env,
                },
                database_url=self.postgres.database_url(),
                components=ALL_COMPONENTS,
            )
            try:
                airflow.start()
            except BaseException:
                airflow.stop()
                raise

    def _start_object_store(self, timeout: float) -> None:
        self.object_store.start(timeout=timeout)
        warehouse = on_object_store(self.settings.warehouse)
        if warehouse is not None:
            self.object_store.make_bucket(warehouse)

    def _object_store_connection(self) -> dict[str, str]:
        """Airflow's ``aws_default`` on the cluster's object store, and no ``EVENTLAKE_S3_*``
        of this process: the DAGs reach the warehouse through the connection alone."""
        if "object-store" not in self.parts:
            return {}
        return self.object_store.airflow_environment()

    def _stop_parts(self, parts: Iterable[str]) -> list[str]:
        stopped = []
        for part in parts:
            if part == "airflow":
                done = stop_local_airflow(self.airflow_home)
            elif part == "spark":
                done = self.spark.stop()
            elif part == "postgres":
                done = self.postgres.stop()
            elif part == "metastore":
                done = self.metastore.stop()
            elif part == "object-store":
                done = self.object_store.stop()
            else:
                done = self.broker.stop()
            if done:
                stopped.append(part)
        return stopped

    def stop(self) -> list[str]:
        """Stop every part, the last started first; the parts that were running."""
        return self._stop_parts(reversed(self.parts))

    @property
    def logs(self) -> Path:
        """Where the parts' logs are (each in its own folder below)."""
        return self.settings.cluster_dir
