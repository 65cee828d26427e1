"""docker-compose's metastore: the local Hive Metastore (as ``eventlake metastore start``
and the local cluster run it) in the foreground of a container, its catalog in
PostgreSQL.

``python -m eventlake.local.metastore_container`` takes ``EVENTLAKE_METASTORE_DATABASE_URL``
(``jdbc:postgresql://<host>:<port>/<database>``), ``EVENTLAKE_METASTORE_DATABASE_USER`` and
``EVENTLAKE_METASTORE_DATABASE_PASSWORD`` (required: no default password), makes the
database when the server has none of that name (the user must be allowed to), and then
becomes the metastore, on ``EVENTLAKE_METASTORE_HOST`` (docker-compose.yml asks for
``0.0.0.0``, the container's network). The password reaches the service through its
0600 ``hive-site.xml``, never a command line.

Example:
    >>> main()  # in the metastore container; replaced by the metastore's JVM
"""

from __future__ import annotations

import os
import sys
import time
from urllib.parse import urlsplit

from eventlake.core.errors import EventlakeError
from eventlake.local.metastore import LocalMetastore, MetastoreError
from eventlake.local.settings import LocalSettings, load_local_settings

#: How long the database server may take to accept connections (compose starts it first).
CONNECT_SECONDS = 60.0


def postgres_address(url: str) -> tuple[str, int, str]:
    """Host, port and database of a ``jdbc:postgresql://`` URL.

    Example:
        >>> postgres_address("jdbc:postgresql://postgres:5432/metastore")
        ('postgres', 5432, 'metastore')
    """
    parts = urlsplit(url.removeprefix("jdbc:"))
    if parts.scheme != "postgresql" or not parts.hostname or not parts.path.strip("/"):
        raise ValueError(f"not a jdbc:postgresql://<host>:<port>/<database> URL: {url}")
    return parts.hostname, parts.port or 5432, parts.path.strip("/")


def ensure_database(settings: LocalSettings) -> bool:
    """Create the metastore's database unless the server has it; whether it was made."""
    import psycopg2

    url, user = settings.metastore_database_url, settings.metastore_database_user
    password = settings.metastore_database_password
    assert url and user and password is not None  # checked by main()
    host, port, database = postgres_address(url)
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        try:
            connection = psycopg2.connect(
                host=host,
                port=port,
                user=user,
                password=password.get_secret_value(),
                dbname="postgres",
                connect_timeout=5,
            )
            break
        except psycopg2.OperationalError as error:
            if time.monotonic() > deadline:
                raise MetastoreError(
                    f"PostgreSQL on {host}:{port} refused {user} for "
                    f"{CONNECT_SECONDS:.0f}s: {' '.join(str(error).split())}"
                ) from error
            time.sleep(2)
    try:
        connection.autocommit = True  # CREATE DATABASE runs outside a transaction
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
            if cursor.fetchone() is not None:
                return False
            cursor.execute(f'CREATE DATABASE "{database.replace(chr(34), chr(34) * 2)}"')
            return True
    finally:
        connection.close()


def main() -> int:
    """Run the metastore in the foreground (this process becomes its JVM); 2 with a
    sentence when a setting it needs is missing."""
    try:
        settings = load_local_settings()
    except EventlakeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    needed = (
        settings.metastore_database_url,
        settings.metastore_database_user,
        settings.metastore_database_password,
    )
    if any(value is None for value in needed):
        print(
            "error: set EVENTLAKE_METASTORE_DATABASE_URL, EVENTLAKE_METASTORE_DATABASE_USER "
            "and EVENTLAKE_METASTORE_DATABASE_PASSWORD: the container's metastore keeps "
            "its catalog in PostgreSQL, and has no default password.",
            file=sys.stderr,
        )
        return 2
    try:
        made = ensure_database(settings)
        metastore = LocalMetastore(settings)
        metastore.home.mkdir(parents=True, exist_ok=True)
        command = metastore.prepared_command()
    except (EventlakeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    where = postgres_address(str(settings.metastore_database_url))
    print(
        f"metastore on {settings.metastore_host}:{settings.metastore_port}, catalog in "
        f"database {where[2]} on {where[0]}:{where[1]}" + (" (made now)" if made else ""),
        flush=True,
    )
    os.chdir(metastore.home)
    os.execv(command[0], command)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    raise SystemExit(main())
