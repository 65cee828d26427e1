"""eventlake.local.postgres: finding Debian's binaries, running them as the postgres
user when root, the server's configuration, refusing a taken port."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from eventlake.local.postgres import (
    LocalPostgres,
    PostgresError,
    as_server_user,
    find_bin_dir,
    server_config,
)
from eventlake.local.settings import load_local_settings


def _fake_bin(root: Path, version: str) -> Path:
    folder = root / version / "bin"
    folder.mkdir(parents=True)
    for name in ("initdb", "pg_ctl"):
        (folder / name).touch()
    return folder


def test_the_newest_debian_version_is_found(tmp_path: Path) -> None:
    _fake_bin(tmp_path, "9.6")
    newest = _fake_bin(tmp_path, "15")
    (tmp_path / "16" / "bin").mkdir(parents=True)  # a client-only install: no initdb
    assert find_bin_dir(pattern=str(tmp_path / "*" / "bin")) == newest


def test_a_configured_folder_wins(tmp_path: Path) -> None:
    configured = _fake_bin(tmp_path, "13")
    _fake_bin(tmp_path, "15")
    assert find_bin_dir(configured, pattern=str(tmp_path / "*" / "bin")) == configured


def test_no_binaries_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(PostgresError, match=r"make system-packages.*EVENTLAKE_POSTGRES_BIN_DIR"):
        find_bin_dir(pattern=str(tmp_path / "*" / "bin"))


def test_root_runs_the_server_as_the_postgres_user() -> None:
    assert as_server_user(["initdb", "-D", "d"], root=True) == [
        "runuser",
        "-u",
        "postgres",
        "--",
        "initdb",
        "-D",
        "d",
    ]
    assert as_server_user(["initdb", "-D", "d"], root=False) == ["initdb", "-D", "d"]


def test_server_listens_on_the_loopback_only_without_a_socket() -> None:
    lines = server_config(15433).splitlines()
    assert "listen_addresses = '127.0.0.1'" in lines
    assert "port = 15433" in lines
    assert "unix_socket_directories = ''" in lines


def test_start_refuses_a_taken_port(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = int(sock.getsockname()[1])
        postgres = LocalPostgres(load_local_settings(cluster_dir=tmp_path, postgres_port=port))
        with pytest.raises(PostgresError, match=f"{port}.*EVENTLAKE_POSTGRES_PORT"):
            postgres.start(timeout=5)
    assert not postgres.data_dir.exists()
    assert postgres.status().pid is None
    assert postgres.stop() is False


def test_a_postmaster_pid_of_another_program_is_not_ours(tmp_path: Path) -> None:
    """A pid file left by a crash whose pid now runs something else: never signalled."""
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        postgres = LocalPostgres(load_local_settings(cluster_dir=tmp_path))
        postgres.data_dir.mkdir(parents=True)
        (postgres.data_dir / "postmaster.pid").write_text(f"{stranger.pid}\n{postgres.data_dir}\n")

        assert postgres.pid() is None
        assert postgres.stop() is False

        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
