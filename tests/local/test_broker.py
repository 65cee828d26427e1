"""The local KRaft broker: start waits for metadata, start is idempotent, stop is clean,
a taken port gives a clear message. Uses its own broker on its own ports."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlake.local import processes
from eventlake.local.broker import BrokerError, LocalBroker
from eventlake.local.settings import LocalSettings


@pytest.fixture(scope="module")
def own_broker(
    settings: LocalSettings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalBroker]:
    own = settings.model_copy(
        update={
            "broker_port": 29092,
            "controller_port": 29093,
            "broker_sasl_port": None,
            "broker_dir": tmp_path_factory.mktemp("own-broker"),
        }
    )
    broker = LocalBroker(own)
    yield broker
    broker.stop()


def test_start_waits_until_metadata_answers(own_broker: LocalBroker) -> None:
    status = own_broker.start(timeout=90)
    assert status.running
    assert own_broker.answers_metadata()


def test_second_start_keeps_the_same_process(own_broker: LocalBroker) -> None:
    first = own_broker.start(timeout=90).pid
    second = own_broker.start(timeout=90).pid
    assert first is not None and first == second


def test_status_reports_pid_and_address(own_broker: LocalBroker) -> None:
    own_broker.start(timeout=90)
    status = own_broker.status()
    assert status.running and status.pid == own_broker.pid()
    assert "127.0.0.1:29092" in status.describe()


def test_stop_is_clean_and_idempotent(own_broker: LocalBroker) -> None:
    own_broker.start(timeout=90)
    assert own_broker.stop() is True
    assert own_broker.status().running is False
    assert not own_broker.answers_metadata(timeout=1)
    assert own_broker.stop() is False
    log = own_broker.log_file.read_text(errors="replace")
    assert "shut down completed" in log or "shutting down" in log.lower()


def test_taken_port_gives_clear_message(settings: LocalSettings, tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        taken = settings.model_copy(
            update={
                "broker_port": port,
                "controller_port": 29193,
                "broker_sasl_port": None,
                "broker_dir": tmp_path,
            }
        )
        with pytest.raises(BrokerError, match=f"Port {port} .* already taken"):
            LocalBroker(taken).start(timeout=10)


def test_cluster_id_starting_with_dash_formats(settings: LocalSettings, tmp_path: Path) -> None:
    """Kafka's storage tool parses arguments with argparse: an id like "-abc" must not
    be mistaken for an option (about 1 in 64 random ids start with "-")."""
    import eventlake.local.broker as broker_module
    from eventlake.local.java_service import java_executable

    own = settings.model_copy(
        update={"broker_dir": tmp_path, "broker_port": 29292, "broker_sasl_port": None}
    )
    broker = LocalBroker(own)
    broker.home.mkdir(parents=True, exist_ok=True)
    original = broker_module._kafka_cluster_id
    broker_module._kafka_cluster_id = lambda: "-" + original()[1:]
    try:
        broker._write_config()
        broker._format_storage(java_executable(BrokerError), broker._classpath())
    finally:
        broker_module._kafka_cluster_id = original
    assert (broker.data_dir / "meta.properties").exists()


def test_a_stale_pid_file_whose_pid_was_reused_is_not_signalled(
    settings: LocalSettings, tmp_path: Path
) -> None:
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        broker = LocalBroker(settings.model_copy(update={"broker_dir": tmp_path}))
        processes.write_records(broker.pid_file, {"broker": processes.Recorded(stranger.pid, 1)})

        assert broker.pid() is None
        assert broker.stop() is False

        assert stranger.poll() is None
        assert not broker.pid_file.exists()
    finally:
        stranger.kill()
        stranger.wait()
