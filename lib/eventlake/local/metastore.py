"""A Hive Metastore service on this machine, so that Spark, ``spark-sql`` and other
engines (Trino) find eventlake's tables by name.

It is Hive's own metastore as pyspark bundles it (Hive 2.3.10, from pyspark's jars), its
database an embedded Derby under ``settings.metastore_dir``, behind
``io.eventlake.metastore.LoopbackMetastore`` (lib/jvm), which binds 127.0.0.1 only:
Hive 2.3's own ``HiveMetaStore -p`` listens on every interface. One process owns the
Derby database, so every job, shell and engine on the machine shares one catalog.

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


class MetastoreError(EventlakeError, RuntimeError):
    """The local metastore could not be started or stopped; the message says why."""


@dataclass(frozen=True)
class MetastoreStatus:
    """What ``eventlake metastore status`` reports."""

    running: bool
    pid: int | None
    uri: str
    database: Path
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


class LocalMetastore(LocalJavaService):
    """Start, stop and query the project-local Hive Metastore service."""

    what = "metastore"
    record = "metastore"
    error = MetastoreError
    poll_seconds = 0.5

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        self.home = settings.metastore_dir
        self.database = self.home / "db"
        self.log_file = self.home / "metastore.log"
        self.pid_file = self.home / "metastore.pid"
        self.uri = f"thrift://127.0.0.1:{settings.metastore_port}"

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
            with socket.create_connection(("127.0.0.1", self.settings.metastore_port), timeout):
                return True
        except OSError:
            return False

    def _write_config(self) -> Path:
        """``hive-site.xml`` in the service's conf folder: Derby in :attr:`database`,
        Hive's schema made on first use, no async logging (its disruptor is not bundled)."""
        conf = self.home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        derby = f"jdbc:derby:;databaseName={self.database};create=true"
        values = {
            "javax.jdo.option.ConnectionURL": derby,
            "datanucleus.schema.autoCreateAll": "true",
            "hive.metastore.schema.verification": "false",
            "hive.metastore.warehouse.dir": (self.home / "managed").as_uri(),
            "hive.async.log.enabled": "false",
        }
        properties = "".join(
            f"  <property><name>{name}</name><value>{escape(value)}</value></property>\n"
            for name, value in values.items()
        )
        write_atomically(conf / "hive-site.xml", f"<configuration>\n{properties}</configuration>\n")
        return conf

    def prepared_command(self) -> list[str]:
        ours = self.settings.jars_dir / CLASSES_JAR
        if not ours.exists():
            raise MetastoreError(f"{ours} is missing: run `make jars` first.")
        conf = self._write_config()
        return [
            java_executable(MetastoreError),
            "-Xmx512m",
            f"-Dderby.system.home={self.home}",
            f"-Dlog4j2.configurationFile={self.settings.log_config}",
            "-cp",
            f"{conf}:{pyspark_jars() / '*'}:{ours}",
            MAIN_CLASS,
            "127.0.0.1",
            str(self.settings.metastore_port),
        ]

    def start(self, timeout: float = 120.0) -> MetastoreStatus:
        """Start the service unless it runs already; wait until it answers."""
        self.launch(timeout)
        return self.status()
