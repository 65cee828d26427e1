"""A single-node Trino on this machine, reading eventlake's tables by name through its
Delta Lake connector on the metastore the jobs register them in: an engine nobody here
wrote, as a check that the tables are what they claim to be.

Trino's own server (``make trino`` unpacks its ``lib/``, ``bin/`` and Delta Lake plugin
into ``settings.trino_server_dir``), run by a Java 24+ JDK (:func:`trino_java`): one
process that is coordinator and worker, its HTTP port on 127.0.0.1 only, its catalog
``delta`` on ``settings.metastore_uri`` (else the local metastore's port), reading
``file:`` locations as local paths. Queries go through Trino's HTTP protocol
(:meth:`LocalTrino.query`).

Example:
    >>> trino = LocalTrino(load_local_settings())
    >>> trino.start().running
    True
    >>> trino.query("SELECT count(*) FROM delta.eventlake.events").rows
    [[483]]
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx

from eventlake.core.errors import EventlakeError
from eventlake.local.java_service import LocalJavaService
from eventlake.local.settings import LocalSettings
from eventlake.storage.files import write_atomically

MAIN_CLASS: Final = "io.trino.server.TrinoServer"
#: The catalog eventlake's metastore is in, as Trino names it.
CATALOG: Final = "delta"
#: The oldest Java the Trino release of :data:`~eventlake.local.settings` runs on.
MIN_JAVA: Final = 24
#: Where Debian and Temurin packages put JDKs.
JVM_FOLDER: Final = Path("/usr/lib/jvm")
#: Trino's user for eventlake's queries (no authentication on the loopback).
USER: Final = "eventlake"


class TrinoError(EventlakeError, RuntimeError):
    """The local Trino could not be started, stopped or asked; the message says why."""


class TrinoQueryError(TrinoError):
    """Trino refused or failed a query; ``name`` is Trino's error name."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class TrinoResult:
    """A query's columns (name and Trino type) and rows, values as Trino's JSON gives
    them (decimals as strings, json values as their text)."""

    columns: list[tuple[str, str]]
    rows: list[list[Any]]


@dataclass(frozen=True)
class TrinoStatus:
    """What ``eventlake trino status`` reports."""

    running: bool
    pid: int | None
    uri: str
    metastore_uri: str
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return (
                f"trino running (pid {self.pid}) on {self.uri}; catalog {CATALOG} on "
                f"{self.metastore_uri}, log in {self.log_file}"
            )
        return f"trino not running (would listen on {self.uri})"


def java_version(java_home: Path) -> int | None:
    """The feature release of the JDK at ``java_home`` (its ``release`` file), or None.

    Example:
        >>> java_version(Path("/usr/lib/jvm/temurin-25-jdk-amd64"))
        25
    """
    try:
        text = (java_home / "release").read_text()
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
    return int(found.group(1)) if found else None


def trino_java(configured: Path | None = None) -> Path:
    """The ``java`` Trino runs on: ``configured`` (a JDK folder), else ``JAVA_HOME`` when
    it is Java :data:`MIN_JAVA`+, else the newest such JDK in :data:`JVM_FOLDER`.

    Example:
        >>> trino_java()
        PosixPath('/usr/lib/jvm/temurin-25-jdk-amd64/bin/java')
    """
    if configured is not None:
        if (java_version(configured) or 0) < MIN_JAVA:
            raise TrinoError(
                f"EVENTLAKE_TRINO_JAVA_HOME={configured} is not a JDK {MIN_JAVA} or later "
                "(its release file says another version, or there is none)."
            )
        return configured / "bin" / "java"
    homes = [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    homes += sorted(JVM_FOLDER.glob("*"), key=lambda home: java_version(home) or 0, reverse=True)
    for home in homes:
        if (java_version(home) or 0) >= MIN_JAVA and (home / "bin" / "java").exists():
            return home / "bin" / "java"
    raise TrinoError(
        f"Trino needs Java {MIN_JAVA} or later and none was found (JAVA_HOME, "
        f"{JVM_FOLDER}/*): install one (Temurin 25) or set EVENTLAKE_TRINO_JAVA_HOME."
    )


def properties(values: dict[str, str]) -> str:
    """A Java properties file's text, one ``name=value`` a line."""
    return "".join(f"{name}={value}\n" for name, value in values.items())


class LocalTrino(LocalJavaService):
    """Start, stop and query the project-local Trino."""

    what = "trino"
    record = "trino"
    error = TrinoError
    poll_seconds = 0.5

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        self.home = settings.trino_dir
        self.server = settings.trino_server_dir
        self.log_file = self.home / "trino.log"
        self.pid_file = self.home / "trino.pid"
        self.uri = f"http://127.0.0.1:{settings.trino_port}"
        self.metastore_uri = (
            settings.metastore_uri or f"thrift://127.0.0.1:{settings.metastore_port}"
        )

    @property
    def address(self) -> str:
        return self.uri

    def ports(self) -> dict[int, str]:
        return {self.settings.trino_port: "EVENTLAKE_TRINO_PORT"}

    def status(self) -> TrinoStatus:
        """Whether it runs; the metastore is the running catalog's (its file), not the
        settings' of the asking shell."""
        pid = self.pid()
        metastore_uri = self.metastore_uri
        catalog = self.home / "etc" / "catalog" / f"{CATALOG}.properties"
        if pid is not None and catalog.exists():
            for line in catalog.read_text().splitlines():
                name, _, value = line.partition("=")
                if name == "hive.metastore.uri":
                    metastore_uri = value
        return TrinoStatus(pid is not None, pid, self.uri, metastore_uri, self.log_file)

    def answers(self, timeout: float = 1.0) -> bool:
        """True once Trino says it is no longer starting (its catalogs are loaded)."""
        try:
            info = httpx.get(f"{self.uri}/v1/info", timeout=timeout).json()
        except (httpx.HTTPError, ValueError):
            return False
        return isinstance(info, dict) and info.get("starting") is False

    def catalog_properties(self) -> dict[str, str]:
        """The ``delta`` catalog: Trino's Delta Lake connector on the metastore, with the
        local file system rooted at ``/``, so that a ``file:/wh/events`` location is the
        folder ``/wh/events`` (another root would be prefixed to every path)."""
        return {
            "connector.name": "delta_lake",
            "hive.metastore.uri": self.metastore_uri,
            "fs.native-local.enabled": "true",
            "local.location": "/",
        }

    def _write_config(self) -> Path:
        etc = self.home / "etc"
        (etc / "catalog").mkdir(parents=True, exist_ok=True)
        port = self.settings.trino_port
        server = {
            "coordinator": "true",
            "node-scheduler.include-coordinator": "true",
            "http-server.http.port": str(port),
            "discovery.uri": f"http://127.0.0.1:{port}",
            # Jetty binds the node's bind-ip (every interface unless set).
            "node.bind-ip": "127.0.0.1",
            "node.internal-address": "127.0.0.1",
            "node.id": "eventlake-local",
            "plugin.dir": str(self.server / "plugin"),
            "catalog.config-dir": str(etc / "catalog"),
        }
        write_atomically(etc / "config.properties", properties(server))
        write_atomically(etc / "log.properties", properties({"io.trino": "INFO"}))
        write_atomically(etc / "catalog" / f"{CATALOG}.properties", properties(
            self.catalog_properties()
        ))  # fmt: skip
        return etc

    def prepared_command(self) -> list[str]:
        if not (self.server / "lib").is_dir() or not (self.server / "plugin/delta-lake").is_dir():
            raise TrinoError(
                f"Trino's server is not unpacked in {self.server}: run `make trino` first "
                f"(it downloads {self.settings.trino_server_url} once)."
            )
        java = trino_java(self.settings.trino_java_home)
        etc = self._write_config()
        return [
            str(java),
            f"-Xmx{self.settings.trino_heap}",
            "-XX:+ExitOnOutOfMemoryError",
            "-XX:-OmitStackTraceInFastThrow",
            "-Djdk.attach.allowAttachSelf=true",
            "-XX:+EnableDynamicAgentLoading",
            "--enable-native-access=ALL-UNNAMED",
            "-Dfile.encoding=UTF-8",
            "-Dnode.environment=eventlake",
            f"-Dconfig={etc / 'config.properties'}",
            f"-Dlog.levels-file={etc / 'log.properties'}",
            "-cp",
            str(self.server / "lib" / "*"),
            MAIN_CLASS,
        ]

    def start(self, timeout: float = 120.0) -> TrinoStatus:
        """Start Trino unless it runs already; wait until its catalogs are loaded."""
        self.launch(timeout)
        return self.status()

    def query(self, sql: str, timeout: float = 120.0) -> TrinoResult:
        """Run ``sql`` (one statement) and return all its rows; :class:`TrinoQueryError`
        with Trino's message when it fails. Trino's client protocol: POST the statement,
        then follow ``nextUri`` until there is none.

        Example:
            >>> LocalTrino(settings).query("SELECT 1").rows
            [[1]]
        """
        headers = {"X-Trino-User": USER, "X-Trino-Catalog": CATALOG}
        columns: list[tuple[str, str]] = []
        rows: list[list[Any]] = []
        with httpx.Client(timeout=timeout, headers=headers) as client:
            try:
                page = client.post(f"{self.uri}/v1/statement", content=sql).raise_for_status()
                while True:
                    document = page.json()
                    if error := document.get("error"):
                        raise TrinoQueryError(
                            f"Trino failed the query ({error.get('errorName')}): "
                            f"{error.get('message')}",
                            str(error.get("errorName")),
                        )
                    if not columns and document.get("columns"):
                        columns = [(c["name"], c["type"]) for c in document["columns"]]
                    rows.extend(document.get("data", []))
                    if "nextUri" not in document:
                        return TrinoResult(columns, rows)
                    page = client.get(document["nextUri"]).raise_for_status()
            except httpx.HTTPError as error:
                raise TrinoError(
                    f"Trino on {self.uri} did not answer the query ({error}); is it running? "
                    "(eventlake trino status)"
                ) from error
