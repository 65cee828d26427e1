"""The local Hive Metastore service: on the loopback only, refused on a taken port, and a
sentence when its jar is missing."""

from __future__ import annotations

import socket
from pathlib import Path

import psutil
import pytest

from eventlake.local.metastore import LocalMetastore, MetastoreError
from eventlake.local.settings import LocalSettings
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
