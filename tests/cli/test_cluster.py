"""``eventlake cluster``: the status table, its help, and exit 2 on a taken port."""

from __future__ import annotations

import socket
from pathlib import Path

from typer.testing import CliRunner

from eventlake.cli import app
from eventlake.cli.cluster import state_of, status_lines
from eventlake.local.processes import ComponentStatus, free_port


def test_states_tell_alive_from_answering() -> None:
    assert state_of(ComponentStatus("postgres", None, "a", False)) == "stopped"
    assert state_of(ComponentStatus("postgres", 7, "a", False)) == "not answering"
    assert state_of(ComponentStatus("postgres", 7, "a", True)) == "running"


def test_status_table_has_one_line_per_component() -> None:
    lines = status_lines(
        [
            ComponentStatus("spark-master", 12, "spark://127.0.0.1:7077", True, "2 alive"),
            ComponentStatus("postgres", None, "127.0.0.1:5433", False),
        ]
    )
    assert lines[0].split(" | ")[:4] == ["component   ", "state  ", "pid", "address               "]
    assert lines[2].split(" | ")[:3] == ["spark-master", "running", "12 "]
    assert lines[3].split(" | ")[:3] == ["postgres    ", "stopped", "-  "]


def test_help_names_the_parts_and_the_commands() -> None:
    result = CliRunner().invoke(app, ["cluster", "--help"])
    assert result.exit_code == 0
    for word in ("start", "stop", "status", "PostgreSQL", "Spark standalone", "triggerer"):
        assert word in result.output


def test_start_on_a_taken_port_exits_2_saying_which(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = int(sock.getsockname()[1])
        env = {
            "EVENTLAKE_CLUSTER_DIR": str(tmp_path / "cluster"),
            "EVENTLAKE_BROKER_DIR": str(tmp_path / "broker"),
            "EVENTLAKE_BROKER_PORT": str(free_port()),
            "EVENTLAKE_CONTROLLER_PORT": str(free_port()),
            "EVENTLAKE_POSTGRES_PORT": str(free_port()),
            "EVENTLAKE_SPARK_MASTER_PORT": str(free_port()),
            "EVENTLAKE_SPARK_MASTER_UI_PORT": str(free_port()),
            "EVENTLAKE_SPARK_WORKER_UI_PORT": str(free_port()),
            "EVENTLAKE_CLUSTER_AIRFLOW_PORT": str(port),
        }
        result = CliRunner().invoke(app, ["cluster", "start"], env=env)
    assert result.exit_code == 2, result.output
    assert f"{port} (airflow)" in result.output
    assert "EVENTLAKE_CLUSTER_AIRFLOW_PORT" in result.output


def test_status_exits_3_when_the_cluster_is_not_running(tmp_path: Path) -> None:
    env = {
        "EVENTLAKE_CLUSTER_DIR": str(tmp_path / "cluster"),
        "EVENTLAKE_BROKER_DIR": str(tmp_path / "broker"),
        "EVENTLAKE_BROKER_PORT": str(free_port()),
        "EVENTLAKE_CLUSTER_AIRFLOW_PORT": str(free_port()),
        "EVENTLAKE_SPARK_MASTER_UI_PORT": str(free_port()),
        "EVENTLAKE_SPARK_WORKER_UI_PORT": str(free_port()),
        "EVENTLAKE_POSTGRES_PORT": str(free_port()),
    }
    result = CliRunner().invoke(app, ["cluster", "status", "--json"], env=env)
    assert result.exit_code == 3
    assert '"state": "stopped"' in result.output
