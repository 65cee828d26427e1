"""A PostgreSQL server from Debian's packages, as the local cluster's Airflow database.

Its data, log and passwords live in ``<cluster_dir>/postgres``; it listens on
127.0.0.1:``postgres_port`` only (no Unix socket) and holds two databases: ``airflow``,
owned by the user ``airflow`` with a password generated at ``initdb`` (SCRAM), and
``metastore`` (the cluster's Hive Metastore), owned by the user ``metastore`` with a
password of its own, generated at the first start into a 0600 file and sent to the server
as a SCRAM verifier only (never in clear, never on a command line).

``initdb`` and ``postgres`` refuse to run as root: as root they run as the ``postgres``
user (``runuser``), which then owns the folder; as anyone else they run directly.

Example:
    >>> postgres = LocalPostgres(load_local_settings())
    >>> postgres.start()
    >>> postgres.database_url().startswith("postgresql+psycopg2://airflow:")
    True
    >>> postgres.stop()
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Final

from eventlake.core.errors import EventlakeError
from eventlake.local import processes
from eventlake.local.processes import ComponentStatus, port_in_use
from eventlake.local.settings import LocalSettings
from eventlake.storage.files import write_atomically

#: Where Debian installs each PostgreSQL version's server binaries.
DEBIAN_BIN_GLOB: Final = "/usr/lib/postgresql/*/bin"
#: The system user that runs the server when we are root.
SYSTEM_USER: Final = "postgres"
DATABASE: Final = "airflow"
USER: Final = "airflow"
#: The cluster's Hive Metastore's database and its owner (no other rights).
METASTORE_DATABASE: Final = "metastore"
METASTORE_USER: Final = "metastore"


class PostgresError(EventlakeError, RuntimeError):
    """PostgreSQL could not be set up, started or stopped; the message says why."""


def find_bin_dir(configured: Path | None = None, pattern: str = DEBIAN_BIN_GLOB) -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``configured``, else the newest Debian one.

    Example:
        >>> find_bin_dir().name
        'bin'
    """
    if configured is not None:
        candidates = [configured]
    else:

        def version(folder: Path) -> tuple[int, ...]:
            return tuple(int(part) for part in folder.parent.name.split(".") if part.isdigit())

        candidates = sorted((Path(p) for p in glob.glob(pattern)), key=version, reverse=True)
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise PostgresError(
        f"No PostgreSQL server binaries in {configured or pattern}: run `make system-packages` "
        "(installs Debian's postgresql) or set EVENTLAKE_POSTGRES_BIN_DIR."
    )


def as_server_user(command: list[str], *, root: bool | None = None) -> list[str]:
    """``command`` as the user that may run the server: ``postgres`` when we are root.

    Example:
        >>> as_server_user(["initdb", "-D", "d"], root=True)
        ['runuser', '-u', 'postgres', '--', 'initdb', '-D', 'd']
    """
    if root if root is not None else os.geteuid() == 0:
        return ["runuser", "-u", SYSTEM_USER, "--", *command]
    return command


def server_config(port: int) -> str:
    """Lines appended to postgresql.conf at ``initdb``: TCP on the loopback only, no
    Unix socket (its folder would be one more path to own), a small footprint.

    Example:
        >>> "listen_addresses = '127.0.0.1'" in server_config(5433)
        True
    """
    return (
        "\n# eventlake local cluster\n"
        "listen_addresses = '127.0.0.1'\n"
        f"port = {port}\n"
        "unix_socket_directories = ''\n"
        "max_connections = 100\n"
        "shared_buffers = 64MB\n"
        "logging_collector = off\n"
    )


class LocalPostgres:
    """Set up, start, stop and query the cluster's PostgreSQL."""

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        self.home = settings.cluster_dir / "postgres"
        self.data_dir = self.home / "data"
        self.log_file = self.home / "postgres.log"
        self.password_file = self.home / "password"
        self.metastore_password_file = self.home / "metastore-password"
        self.port = settings.postgres_port

    def pid(self) -> int | None:
        """The postmaster's pid (first line of postmaster.pid) while it runs on this data
        folder: a stale file's pid, now another process's, is not ours to signal."""
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, PermissionError, ValueError):
            return None
        ours = str(self.data_dir) in processes.command_line(pid)
        return pid if ours and processes.alive(pid) else None

    def answers(self) -> bool:
        """True when the server accepts connections on its port."""
        try:
            bin_dir = find_bin_dir(self.settings.postgres_bin_dir)
        except PostgresError:
            return False
        command = [str(bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
        return subprocess.run(command, check=False, timeout=10).returncode == 0

    def password(self) -> str:
        return self.password_file.read_text().strip()

    def metastore_password(self) -> str:
        return self.metastore_password_file.read_text().strip()

    def metastore_jdbc_url(self) -> str:
        """The JDBC URL of the ``metastore`` database (no credentials in it).

        Example:
            >>> LocalPostgres(load_local_settings(postgres_port=5433)).metastore_jdbc_url()
            'jdbc:postgresql://127.0.0.1:5433/metastore'
        """
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{METASTORE_DATABASE}"

    def database_url(self) -> str:
        """The SQLAlchemy URL of the ``airflow`` database, password included."""
        return f"postgresql+psycopg2://{USER}:{self.password()}@127.0.0.1:{self.port}/{DATABASE}"

    def status(self) -> ComponentStatus:
        pid = self.pid()
        answers = pid is not None and self.answers()
        return ComponentStatus("postgres", pid, f"127.0.0.1:{self.port}", answers)

    def _run(self, command: list[str], what: str, timeout: float = 120) -> None:
        processes.run_to_end(
            as_server_user(command),
            what=what,
            error=PostgresError,
            cwd=self.home,
            timeout=timeout,
            after=f"\nServer log: {self.log_file}",
        )

    def _prepare_home(self) -> None:
        """Create the folder; as root, hand it to the ``postgres`` user, who must be able
        to reach it."""
        self.home.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return
        shutil.chown(self.home, user=SYSTEM_USER, group=SYSTEM_USER)
        for path in self.home.rglob("*"):
            shutil.chown(path, user=SYSTEM_USER, group=SYSTEM_USER)
        reach = subprocess.run(as_server_user(["test", "-w", str(self.home)]), check=False)
        if reach.returncode != 0:
            raise PostgresError(
                f"The {SYSTEM_USER} user cannot write to {self.home} (a parent folder is not "
                "traversable by others?): make the parents of EVENTLAKE_CLUSTER_DIR "
                "world-traversable (chmod o+x) or point EVENTLAKE_CLUSTER_DIR elsewhere."
            )

    def _initdb(self, bin_dir: Path) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            return
        # Created 0600: never readable by others, not even before a chmod.
        write_atomically(self.password_file, secrets.token_urlsafe(24) + "\n", mode=0o600)
        if os.geteuid() == 0:
            shutil.chown(self.password_file, user=SYSTEM_USER, group=SYSTEM_USER)
        self._run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                USER,
                f"--pwfile={self.password_file}",
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
            ],
            "initdb",
        )
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write(server_config(self.port))

    def _create_database(self) -> None:
        import psycopg2

        connection = psycopg2.connect(
            host="127.0.0.1", port=self.port, user=USER, password=self.password(), dbname="postgres"
        )
        try:
            connection.autocommit = True  # CREATE DATABASE runs outside a transaction
            with connection.cursor() as cursor:
                self._metastore_role(connection, cursor)
                for database, owner in ((DATABASE, USER), (METASTORE_DATABASE, METASTORE_USER)):
                    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
                    if cursor.fetchone() is None:
                        cursor.execute(f'CREATE DATABASE "{database}" OWNER "{owner}"')
        finally:
            connection.close()

    def _metastore_role(self, connection: Any, cursor: Any) -> None:
        """The ``metastore`` login role with the password of its file (made once, 0600),
        set at every start (a lost file gets a new one); the server sees a SCRAM
        verifier, which is all a logged statement could show."""
        from psycopg2.extensions import encrypt_password

        if not self.metastore_password_file.exists():
            write_atomically(
                self.metastore_password_file, secrets.token_urlsafe(24) + "\n", mode=0o600
            )
        verifier = encrypt_password(
            self.metastore_password(), METASTORE_USER, connection, "scram-sha-256"
        )
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (METASTORE_USER,))
        verb = "ALTER" if cursor.fetchone() else "CREATE"
        cursor.execute(f'{verb} ROLE "{METASTORE_USER}" LOGIN PASSWORD %s', (verifier,))

    def start(self, timeout: float = 60.0) -> None:
        """Set up the data folder once, start the server unless it runs, create the
        ``airflow`` and ``metastore`` databases once."""
        if self.pid() is None:
            if port_in_use(self.port):
                raise PostgresError(
                    f"Port {self.port} on 127.0.0.1 is taken, so PostgreSQL cannot start. "
                    "Stop what holds it or pick another with EVENTLAKE_POSTGRES_PORT."
                )
            bin_dir = find_bin_dir(self.settings.postgres_bin_dir)
            self._prepare_home()
            self._initdb(bin_dir)
            self._run(
                [
                    str(bin_dir / "pg_ctl"),
                    "start",
                    "-D",
                    str(self.data_dir),
                    "-l",
                    str(self.log_file),
                    "-o",
                    f"-p {self.port}",  # the settings' port, also when it changed since
                    "-w",
                    "-t",
                    str(int(timeout)),
                ],
                "pg_ctl start",
                timeout=timeout + 10,
            )
        deadline = time.monotonic() + timeout
        while not self.answers():
            if time.monotonic() > deadline:
                raise PostgresError(
                    f"PostgreSQL does not answer on 127.0.0.1:{self.port}; "
                    f"last lines of {self.log_file}:\n{processes.log_tail(self.log_file)}"
                )
            time.sleep(0.5)
        self._create_database()

    def stop(self, timeout: float = 30.0) -> bool:
        """Fast shutdown (SIGINT: clients disconnected, then a clean stop), SIGKILL when
        it has not ended after ``timeout``. False when it was not running."""
        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGINT)
        if processes.wait_gone([pid], timeout=timeout):
            os.kill(pid, signal.SIGKILL)
            processes.wait_gone([pid], timeout=10)
        return True
