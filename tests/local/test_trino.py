"""The local Trino's parts that need no Trino: the unpacking of its archive, the choice
of its JDK, its configuration (tests/warehouse/test_trino.py runs the real one)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from eventlake.local.settings import LocalSettings
from eventlake.local.trino import LocalTrino, TrinoError, java_version, trino_java
from eventlake.local.trino_install import unpack


def _archive(path: Path) -> Path:
    """A small archive shaped like Trino's: a jar two plugins share, stored once in the
    first plugin and as a hard link in the second."""
    with tarfile.open(path, "w:gz") as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"trino-server-476/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("lib/trino-main.jar", b"main")
        add("plugin/bigquery/shared.jar", b"shared bytes")
        add("plugin/bigquery/only-bigquery.jar", b"bq")
        link = tarfile.TarInfo("trino-server-476/plugin/delta-lake/shared.jar")
        link.type = tarfile.LNKTYPE
        link.linkname = "trino-server-476/plugin/bigquery/shared.jar"
        tar.addfile(link)
        add("plugin/delta-lake/delta.jar", b"delta")
    return path


def test_unpacking_keeps_the_delta_plugin_and_gives_its_borrowed_jars_their_bytes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "trino-server"
    unpack(_archive(tmp_path / "trino.tar.gz"), folder)

    assert (folder / "plugin/delta-lake/shared.jar").read_bytes() == b"shared bytes"
    assert (folder / "plugin/delta-lake/delta.jar").read_bytes() == b"delta"
    assert (folder / "lib/trino-main.jar").read_bytes() == b"main"
    assert sorted(p.name for p in (folder / "plugin").iterdir()) == ["delta-lake"]


def _jdk(folder: Path, version: str) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "java").write_text("")
    (folder / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return folder


def test_trino_runs_on_a_jdk_24_or_later_and_says_so_otherwise(tmp_path: Path) -> None:
    assert java_version(_jdk(tmp_path / "jdk25", "25.0.3")) == 25
    assert trino_java(tmp_path / "jdk25") == tmp_path / "jdk25" / "bin" / "java"
    with pytest.raises(TrinoError, match="not a JDK 24 or later"):
        trino_java(_jdk(tmp_path / "jdk17", "17.0.15"))


def test_its_configuration_binds_the_loopback_and_maps_file_locations_to_paths(
    settings: LocalSettings, tmp_path: Path
) -> None:
    server = tmp_path / "server"
    for folder in ("lib", "plugin/delta-lake"):
        (server / folder).mkdir(parents=True)
    trino = LocalTrino(
        settings.model_copy(
            update={
                "trino_dir": tmp_path / "trino",
                "trino_server_dir": server,
                "trino_port": 18091,
                "metastore_uri": "thrift://127.0.0.1:19083",
            }
        )
    )
    command = trino.prepared_command()

    config = (tmp_path / "trino/etc/config.properties").read_text().splitlines()
    assert "node.bind-ip=127.0.0.1" in config and "http-server.http.port=18091" in config
    catalog = (tmp_path / "trino/etc/catalog/delta.properties").read_text().splitlines()
    assert "hive.metastore.uri=thrift://127.0.0.1:19083" in catalog
    assert "local.location=/" in catalog
    assert command[-1] == "io.trino.server.TrinoServer"


def test_an_unpacked_server_is_asked_for_before_the_start(
    settings: LocalSettings, tmp_path: Path
) -> None:
    trino = LocalTrino(
        settings.model_copy(
            update={"trino_dir": tmp_path / "trino", "trino_server_dir": tmp_path / "none"}
        )
    )
    with pytest.raises(TrinoError, match="run `make trino` first"):
        trino.prepared_command()
