"""A Hive Metastore service on this machine, so that Spark, ``spark-sql`` and other
engines (Trino) find eventlake's tables by name.

It is Hive's own metastore as pyspark bundles it (Hive 2.3.10, from pyspark's jars),
behind ``io.eventlake.metastore.LoopbackMetastore`` (lib/jvm), which binds
``settings.metastore_host`` (127.0.0.1) only: Hive 2.3's own ``HiveMetaStore -p`` listens
on every interface. Its database is the settings' (:func:`database_properties`): an
embedded Derby under ``settings.metastore_dir`` by default (one process owns it, so every
job, shell and engine on the machine shares one catalog), or PostgreSQL
(``metastore_database_url``, as the local cluster and docker-compose run it, with the
driver from ``metastore_jars_dir``). Either way Hive's schema is made on first use
(DataNucleus' ``autoCreateAll``). A database password goes only into the service's
0600 ``hive-site.xml``, never on its command line.

Example:
    >>> metastore = LocalMetastore(load_local_settings())
    >>> metastore.start().running
    True
    >>> metastore.uri
    'thrift://127.0.0.1:9083'
"""

from __future__ import annotations

import importlib.util
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from xml.sax.saxutils import escape

from eventlake.core.errors import EventlakeError
from eventlake.local.java_service import LocalJavaService, java_executable
from eventlake.local.settings import LocalSettings
from eventlake.storage.files import write_atomically

MAIN_CLASS: Final = "io.eventlake.metastore.LoopbackMetastore"
#: The jar of eventlake's JVM classes (lib/jvm), where :data:`MAIN_CLASS` is.
CLASSES_JAR: Final = "eventlake-cloudevents-0.1.0.jar"
#: Hive's model classes (``package.jdo``), whose tables DataNucleus makes at the start on
#: PostgreSQL (:func:`schema_properties`).
MODEL_CLASSES: Final = ",".join(
    f"org.apache.hadoop.hive.metastore.model.M{name}"
    for name in (
        "Database",
        "Type",
        "FieldSchema",
        "Order",
        "ColumnDescriptor",
        "StringList",
        "SerDeInfo",
        "StorageDescriptor",
        "Table",
        "Constraint",
        "Partition",
        "Index",
        "Role",
        "RoleMap",
        "GlobalPrivilege",
        "DBPrivilege",
        "TablePrivilege",
        "PartitionPrivilege",
        "TableColumnPrivilege",
        "PartitionColumnPrivilege",
        "PartitionEvent",
        "MasterKey",
        "DelegationToken",
        "TableColumnStatistics",
        "PartitionColumnStatistics",
        "VersionTable",
        "ResourceUri",
        "Function",
        "NotificationLog",
        "NotificationNextId",
        "PrincipalDesc",
    )
)
#: The JDBC driver class of each database the service runs on, by URL prefix.
DRIVERS: Final = {
    "jdbc:derby:": "org.apache.derby.jdbc.EmbeddedDriver",
    "jdbc:postgresql:": "org.postgresql.Driver",
}


class MetastoreError(EventlakeError, RuntimeError):
    """The local metastore could not be started or stopped; the message says why."""


@dataclass(frozen=True)
class MetastoreStatus:
    """What ``eventlake metastore status`` reports."""

    running: bool
    pid: int | None
    uri: str
    database: str
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return (
                f"metastore running (pid {self.pid}) on {self.uri}; database in "
                f"{self.database}, log in {self.log_file}"
            )
        return f"metastore not running (would listen on {self.uri})"


def pyspark_jars() -> Path:
    """The folder of the jars pyspark ships (Hive's metastore, Derby, Thrift among them).

    Example:
        >>> pyspark_jars().name
        'jars'
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise MetastoreError("pyspark is not installed here: run `make setup` first.")
    return Path(spec.origin).parent / "jars"


def database_properties(settings: LocalSettings) -> dict[str, str]:
    """The ``javax.jdo.option.*`` properties of the service's database: Derby in
    ``<metastore_dir>/db`` unless ``metastore_database_url`` names another (PostgreSQL),
    with its user and password.

    Example:
        >>> database_properties(load_local_settings(metastore_dir=Path("/ms")))
        {'javax.jdo.option.ConnectionURL': 'jdbc:derby:;databaseName=/ms/db;create=true', ...}
    """
    url = settings.metastore_database_url or (
        f"jdbc:derby:;databaseName={settings.metastore_dir / 'db'};create=true"
    )
    driver = next((d for prefix, d in DRIVERS.items() if url.startswith(prefix)), None)
    if driver is None:
        raise MetastoreError(
            "EVENTLAKE_METASTORE_DATABASE_URL must be a jdbc:postgresql:// URL (or unset, "
            "for an embedded Derby): the local metastore has no other JDBC driver."
        )
    properties = {
        "javax.jdo.option.ConnectionURL": url,
        "javax.jdo.option.ConnectionDriverName": driver,
    }
    if settings.metastore_database_user:
        properties["javax.jdo.option.ConnectionUserName"] = settings.metastore_database_user
    if settings.metastore_database_password is not None:
        password = settings.metastore_database_password.get_secret_value()
        properties["javax.jdo.option.ConnectionPassword"] = password
    return properties


def schema_properties(settings: LocalSettings) -> dict[str, str]:
    """How DataNucleus makes Hive's schema on first use. Derby: everything, as needed.
    PostgreSQL: every table at the start and no foreign keys. Measured on Hive 2.3.10
    with ``autoCreateAll``, the first CREATE TABLE waited for ever: its transaction held
    a lock on TBLS while DataNucleus' schema connection added TBL_PRIVS' foreign key to
    it (also with the tables made at the start). Without the keys a schema and its
    tables were made at once (tests/local/test_metastore.py).

    Example:
        >>> schema_properties(load_local_settings())
        {'datanucleus.schema.autoCreateAll': 'true'}
    """
    if not (settings.metastore_database_url or "").startswith("jdbc:postgresql:"):
        return {"datanucleus.schema.autoCreateAll": "true"}
    return {
        "datanucleus.schema.autoCreateAll": "false",
        "datanucleus.schema.autoCreateTables": "true",
        "datanucleus.schema.autoCreateColumns": "true",
        "datanucleus.schema.autoCreateConstraints": "false",
        "datanucleus.autoStartMechanism": "Classes",
        "datanucleus.autoStartClassNames": MODEL_CLASSES,
    }


def _reachable(host: str) -> str:
    """The address a client on this machine reaches ``host`` at (a wildcard: loopback)."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


class LocalMetastore(LocalJavaService):
    """Start, stop and query the project-local Hive Metastore service."""

    what = "metastore"
    record = "metastore"
    error = MetastoreError
    poll_seconds = 0.5

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        self.home = settings.metastore_dir
        #: Where its catalog is: Derby's folder, or the database's JDBC URL.
        self.database = settings.metastore_database_url or str(self.home / "db")
        self.log_file = self.home / "metastore.log"
        self.pid_file = self.home / "metastore.pid"
        self.host = _reachable(settings.metastore_host)
        self.uri = f"thrift://{self.host}:{settings.metastore_port}"

    @property
    def address(self) -> str:
        return self.uri

    def ports(self) -> dict[int, str]:
        return {self.settings.metastore_port: "EVENTLAKE_METASTORE_PORT"}

    def status(self) -> MetastoreStatus:
        pid = self.pid()
        return MetastoreStatus(pid is not None, pid, self.uri, self.database, self.log_file)

    def answers(self, timeout: float = 1.0) -> bool:
        """True once the Thrift port accepts a connection (it opens after Hive's handler,
        and with it the database, is ready)."""
        try:
            with socket.create_connection((self.host, self.settings.metastore_port), timeout):
                return True
        except OSError:
            return False

    def _write_config(self) -> Path:
        """``hive-site.xml`` (0600: it may hold the database's password) in the service's
        conf folder: the database of :func:`database_properties`, Hive's schema made on
        first use, no async logging (its disruptor is not bundled)."""
        conf = self.home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        values = {
            **database_properties(self.settings),
            **schema_properties(self.settings),
            "hive.metastore.schema.verification": "false",
            "hive.metastore.warehouse.dir": (self.home / "managed").as_uri(),
            "hive.async.log.enabled": "false",
        }
        properties = "".join(
            f"  <property><name>{name}</name><value>{escape(value)}</value></property>\n"
            for name, value in values.items()
        )
        text = f"<configuration>\n{properties}</configuration>\n"
        write_atomically(conf / "hive-site.xml", text, mode=0o600)
        return conf

    def prepared_command(self) -> list[str]:
        ours = self.settings.jars_dir / CLASSES_JAR
        if not ours.exists():
            raise MetastoreError(f"{ours} is missing: run `make jars` first.")
        class_path = [str(self.home / "conf"), str(pyspark_jars() / "*"), str(ours)]
        if self.settings.metastore_database_url:
            drivers = sorted(self.settings.metastore_jars_dir.glob("postgresql-*.jar"))
            if not drivers:
                raise MetastoreError(
                    f"No PostgreSQL JDBC driver in {self.settings.metastore_jars_dir}: run "
                    "`make jars` first (or set EVENTLAKE_METASTORE_JARS_DIR)."
                )
            class_path.append(str(drivers[-1]))
        self._write_config()
        return [
            java_executable(MetastoreError),
            "-Xmx512m",
            f"-Dderby.system.home={self.home}",
            f"-Dlog4j2.configurationFile={self.settings.log_config}",
            "-cp",
            ":".join(class_path),
            MAIN_CLASS,
            self.settings.metastore_host,
            str(self.settings.metastore_port),
        ]

    def start(self, timeout: float = 120.0) -> MetastoreStatus:
        """Start the service unless it runs already; wait until it answers."""
        self.launch(timeout)
        return self.status()
