"""The local Hive Metastore service: on the loopback only, refused on a taken port, a
sentence when its jar is missing, and on PostgreSQL as the local cluster runs it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pyarrow as pa
import pytest
from pydantic import SecretStr

from eventlake.core.locations import Location
from eventlake.local.metastore import LocalMetastore, MetastoreError
from eventlake.local.postgres import METASTORE_DATABASE, METASTORE_USER, LocalPostgres
from eventlake.local.processes import free_port
from eventlake.local.settings import LocalSettings
from eventlake.storage.store import append_to_delta_table
from tests.conftest import TEST_BROKER_PORT

#: Beside the test broker's ports, and not test_catalog's metastore (+4).
PORT = TEST_BROKER_PORT + 5


def _metastore(settings: LocalSettings, folder: Path, **update: object) -> LocalMetastore:
    changes = {"metastore_dir": folder, "metastore_port": PORT, **update}
    return LocalMetastore(settings.model_copy(update=changes))


def test_the_metastore_listens_on_the_loopback_only(
    settings: LocalSettings, tmp_path: Path
) -> None:
    metastore = _metastore(settings, tmp_path)
    status = metastore.start()
    try:
        assert status.running and status.uri == f"thrift://127.0.0.1:{PORT}"
        listening = {
            c.laddr.ip
            for c in psutil.Process(status.pid).net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == PORT
        }
        assert listening and listening <= {"127.0.0.1", "::ffff:127.0.0.1"}, listening
    finally:
        assert metastore.stop()
    assert not metastore.status().running


def test_a_taken_port_is_refused_with_the_setting_to_change(
    settings: LocalSettings, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", PORT))
        taken.listen()
        with pytest.raises(MetastoreError, match="EVENTLAKE_METASTORE_PORT"):
            _metastore(settings, tmp_path).start()


def test_a_missing_jar_says_to_run_make_jars(settings: LocalSettings, tmp_path: Path) -> None:
    metastore = _metastore(settings, tmp_path / "ms", jars_dir=tmp_path / "no-jars")
    with pytest.raises(MetastoreError, match="make jars"):
        metastore.start()


def test_on_postgresql_a_registration_makes_its_schema_and_tables_there(
    settings: LocalSettings,
) -> None:
    """The local cluster's way: the catalog in PostgreSQL's ``metastore`` database (its
    own user and password file), a schema and tables made through the metastore by
    ``eventlake catalog``, read back from PostgreSQL itself."""
    # Reachable by the postgres user when we are root (tmp_path's parents are 0700).
    folder = Path(tempfile.mkdtemp(prefix="eventlake-metastore-pg-"))
    folder.chmod(0o755)
    own = settings.model_copy(
        update={"cluster_dir": folder / "cluster", "postgres_port": free_port()}
    )
    postgres = LocalPostgres(own)
    metastore: LocalMetastore | None = None
    try:
        postgres.start()
        metastore = _metastore(
            own,
            folder / "metastore",
            metastore_port=free_port(),
            metastore_database_url=postgres.metastore_jdbc_url(),
            metastore_database_user=METASTORE_USER,
            metastore_database_password=SecretStr(postgres.metastore_password()),
        )
        metastore.start()
        conf = (folder / "metastore" / "conf" / "hive-site.xml").stat()
        assert conf.st_mode & 0o077 == 0  # it holds the password
        assert postgres.metastore_password() not in " ".join(
            psutil.Process(metastore.pid()).cmdline()
        )
        warehouse = folder / "warehouse"
        for table in ("events", "state/orders"):
            append_to_delta_table(Location.of(warehouse / table), pa.table({"id": ["x"]}))
        env = {
            **os.environ,
            "EVENTLAKE_WAREHOUSE": str(warehouse),
            "EVENTLAKE_METASTORE_URI": metastore.uri,
            "EVENTLAKE_METASTORE_SCHEMA": "on_pg",
        }
        done = subprocess.run(
            [sys.executable, "-m", "eventlake.cli", "catalog"],
            env=env, cwd=folder, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

        registered = _catalog_rows(postgres)
        assert registered == [
            ("on_pg", "events", "EXTERNAL_TABLE"),
            ("on_pg", "state_orders", "EXTERNAL_TABLE"),
        ]
    finally:
        if metastore is not None:
            metastore.stop()
        postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _catalog_rows(postgres: LocalPostgres) -> list[tuple[str, str, str]]:
    """(schema, table, type) of every table in the metastore's PostgreSQL database, as
    the metastore's own user reads them."""
    import psycopg2

    connection = psycopg2.connect(
        host="127.0.0.1",
        port=postgres.port,
        user=METASTORE_USER,
        password=postgres.metastore_password(),
        dbname=METASTORE_DATABASE,
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                'SELECT d."NAME", t."TBL_NAME", t."TBL_TYPE" FROM "TBLS" t '
                'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" ORDER BY 1, 2'
            )
            return [tuple(row) for row in cursor.fetchall()]
    finally:
        connection.close()
