"""A real S3 server on this machine: s3proxy (Apache-2.0, Java) on its filesystem-nio2
backend, for the tests, the local cluster and, as an option, the demo.

It runs from the jars Maven put in ``infra/jars/s3server`` and keeps its objects, log,
pid file and configuration under ``settings.s3_server_dir``; it listens on
``s3_server_host``:``s3_server_port``, 127.0.0.1 unless
asked. Its credentials are generated at the first start into
``credentials.json`` (0600) and the server reads them from its own properties file
(0600), never from a command line.

Why s3proxy: its ``PUT`` with ``If-None-Match: *`` is decided as it writes (measured: of
two or eight concurrent conditional PUTs of one key, exactly one succeeds, 200 keys in
a row); that is what Delta commits on S3 need. Its ``If-Match`` is not (of eight
concurrent PUTs with one ETag, up to eight succeeded), and a conditional DELETE is not
implemented (501): nothing in eventlake relies on either. :func:`probe_conditional_put`
holds the first fact before the tests rely on it.

Example:
    >>> server = LocalS3Server(load_local_settings())
    >>> server.start().running
    True
    >>> server.connection().s3_endpoint
    'http://127.0.0.1:9000'
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
from pydantic import SecretStr

from eventlake.core.errors import EventlakeError
from eventlake.core.locations import Location
from eventlake.core.object_store import AWS_CONN_ID, ObjectStoreSettings
from eventlake.local.java_service import LocalJavaService, java_executable
from eventlake.local.settings import LocalSettings
from eventlake.storage import s3_store
from eventlake.storage.files import write_atomically

MAIN_CLASS: Final = "org.gaul.s3proxy.Main"
#: The region the server answers for (it takes any; clients sign with this one).
REGION: Final = "us-east-1"
_LOGBACK: Final = """<configuration>
  <appender name="LOG" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="LOG"/></root>
</configuration>
"""


class S3ServerError(EventlakeError, RuntimeError):
    """The local S3 server could not be started, stopped or trusted; the message says why."""


@dataclass(frozen=True)
class S3ServerStatus:
    """What ``eventlake s3-server status`` reports (never the credentials)."""

    running: bool
    pid: int | None
    endpoint: str
    data_dir: Path
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return (
                f"S3 server running (pid {self.pid}) on {self.endpoint}; objects in "
                f"{self.data_dir}, log in {self.log_file}"
            )
        return f"S3 server not running (would listen on {self.endpoint})"


class LocalS3Server(LocalJavaService):
    """Start, stop and query the project-local S3 server."""

    what = "S3 server"
    record = "s3server"
    error = S3ServerError
    poll_seconds = 0.2

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        self.home = settings.s3_server_dir
        self.data_dir = self.home / "data"
        self.log_file = self.home / "server.log"
        self.pid_file = self.home / "server.pid"
        self.config_file = self.home / "s3proxy.properties"
        self.credentials_file = self.home / "credentials.json"
        self.endpoint = f"http://{settings.s3_server_host}:{settings.s3_server_port}"

    # -- queries ---------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self.endpoint

    def ports(self) -> dict[int, str]:
        return {self.settings.s3_server_port: "EVENTLAKE_S3_SERVER_PORT"}

    def status(self) -> S3ServerStatus:
        pid = self.pid()
        return S3ServerStatus(pid is not None, pid, self.endpoint, self.data_dir, self.log_file)

    def connection(self) -> ObjectStoreSettings:
        """How a client reaches this server (its endpoint, path style and credentials).

        Example:
            >>> server.connection().s3_path_style
            True
        """
        identity, credential = self._credentials()
        return ObjectStoreSettings(
            s3_endpoint=self.endpoint,
            s3_region=REGION,
            s3_path_style=True,
            s3_access_key_id=SecretStr(identity),
            s3_secret_access_key=SecretStr(credential),
        )

    def environment(self) -> dict[str, str]:
        """The ``EVENTLAKE_S3_*`` variables of :meth:`connection`, for a job's environment.

        Example:
            >>> sorted(server.environment())[0]
            'EVENTLAKE_S3_ACCESS_KEY_ID'
        """
        return self.connection().environment()

    def airflow_environment(self) -> dict[str, str]:
        """An Airflow deployment's environment for this server: ``aws_default`` on it
        (``AIRFLOW_CONN_AWS_DEFAULT``) and every ``EVENTLAKE_S3_*`` empty, so that the
        DAGs reach the warehouse through the connection alone, as in production.

        Example:
            >>> json.loads(server.airflow_environment()["AIRFLOW_CONN_AWS_DEFAULT"])["conn_type"]
            'aws'
        """
        store = self.connection()
        blank = dict.fromkeys(store.environment(), "")
        return {
            **blank,
            f"AIRFLOW_CONN_{AWS_CONN_ID.upper()}": json.dumps(store.airflow_connection()),
        }

    def make_bucket(self, location: Location) -> None:
        """Make the bucket of ``location`` (an ``s3a://`` location) unless it exists.

        Example:
            >>> server.make_bucket(Location.of("s3a://eventlake/warehouse"))
        """
        client = s3_store.client(self.connection())
        made = (client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists)
        with contextlib.suppress(*made):
            client.create_bucket(Bucket=s3_store.bucket_and_key(location)[0])

    def answers(self, timeout: float = 1.0) -> bool:
        """True when the server answers HTTP (any status: an unsigned request is refused)."""
        try:
            httpx.get(f"{self.endpoint}/", timeout=timeout)
        except httpx.HTTPError:
            return False
        return True

    # -- start and stop --------------------------------------------------------------------

    def use_credentials(self, identity: str, credential: str) -> None:
        """Serve with these keys instead of generated ones (kept 0600 in its folder)."""
        self.home.mkdir(parents=True, exist_ok=True)
        write_atomically(
            self.credentials_file,
            json.dumps({"identity": identity, "credential": credential}),
            mode=0o600,
        )

    def _credentials(self) -> tuple[str, str]:
        """The server's identity and credential, generated once (0600)."""
        try:
            stored = json.loads(self.credentials_file.read_text())
            return str(stored["identity"]), str(stored["credential"])
        except FileNotFoundError:
            pass
        identity, credential = f"eventlake{secrets.token_hex(6)}", secrets.token_urlsafe(30)
        self.use_credentials(identity, credential)
        return identity, credential

    def _write_config(self) -> None:
        identity, credential = self._credentials()
        lines = {
            "s3proxy.endpoint": self.endpoint,
            "s3proxy.authorization": "aws-v2-or-v4",
            "s3proxy.identity": identity,
            "s3proxy.credential": credential,
            "jclouds.provider": "filesystem-nio2",
            "jclouds.filesystem.basedir": str(self.data_dir),
        }
        text = "".join(f"{key}={value}\n" for key, value in lines.items())
        write_atomically(self.config_file, text, mode=0o600)
        write_atomically(self.home / "logback.xml", _LOGBACK)

    def prepared_command(self) -> list[str]:
        folder = self.settings.s3_server_jars_dir
        if not any(folder.glob("s3proxy-*.jar")):
            raise S3ServerError(
                f"The S3 server's jars are missing in {folder}. Run `make jars` first "
                "(or set EVENTLAKE_S3_SERVER_JARS_DIR)."
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        return [
            java_executable(S3ServerError),
            "-Xmx256m",
            "-Djava.awt.headless=true",
            f"-Dlogback.configurationFile={self.home / 'logback.xml'}",
            "-cp",
            str(folder / "*"),
            MAIN_CLASS,
            "--properties",
            str(self.config_file),
        ]

    def start(self, timeout: float = 60.0) -> S3ServerStatus:
        """Start the server unless it runs already; wait until it answers."""
        self.launch(timeout)
        return self.status()


def probe_conditional_put(client: Any, bucket: str, *, rounds: int = 20) -> None:
    """Hold that the server decides ``If-None-Match: *`` atomically: ``rounds`` times, two
    concurrent conditional PUTs of one new key give exactly one success and one 412.
    Raises :class:`S3ServerError` with a sentence when they do not: such a server cannot
    test concurrent commits.

    Example:
        >>> probe_conditional_put(s3_client(server.connection()), "probe")
    """
    prefix = f"_probe/{uuid.uuid4().hex}"
    for round_number in range(rounds):
        outcomes = _race_to_create(client, bucket, f"{prefix}/{round_number}")
        if sorted(outcomes, key=str) != [200, 412]:
            raise S3ServerError(
                f"The S3 server cannot test concurrent commits: two concurrent PUTs with "
                f"If-None-Match: * of one new key answered {outcomes}, not one success and "
                "one 412 (Precondition Failed). Use a server whose conditional PUT is atomic."
            )
    for round_number in range(rounds):
        client.delete_object(Bucket=bucket, Key=f"{prefix}/{round_number}")


def _race_to_create(client: Any, bucket: str, key: str) -> list[object]:
    """Two threads PUT ``key`` with ``If-None-Match: *`` at once; each one's HTTP status."""
    start = threading.Barrier(2)
    outcomes: list[object] = [None, None]

    def put(slot: int) -> None:
        start.wait()
        try:
            client.put_object(Bucket=bucket, Key=key, Body=b"%d" % slot, IfNoneMatch="*")
            outcomes[slot] = 200
        except Exception as error:  # botocore's ClientError carries the status
            answer = getattr(error, "response", {}).get("ResponseMetadata", {})
            outcomes[slot] = answer.get("HTTPStatusCode", repr(error))

    writers = [threading.Thread(target=put, args=(slot,)) for slot in (0, 1)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    return outcomes
