"""Authenticated Kafka: a SASL/SCRAM-SHA-512 listener on the local broker, ingest with
credentials from settings, no password in any log or command line, and a wrong
password giving a clear authentication error instead of a hang."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer
from pydantic import SecretStr
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import produce_all
from eventlake.kafka.connection import KafkaConnectionError
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import LocalSettings
from tests.helpers import binary_headers

USER = "eventlake-app"
SASL_OPTIONS = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": USER,
}


@pytest.fixture(scope="module")
def password() -> str:
    # What Kafka's JAAS parser treats specially, and what a shell or a config file would:
    # quotes, backslashes, spaces, ';', '=', non-ASCII.
    return 'pw "q" \\b s;p=é ' + secrets.token_hex(12)


@pytest.fixture(scope="module")
def secured_broker(broker: LocalBroker, password: str) -> LocalBroker:
    """The session broker (it has a SASL_PLAINTEXT listener) with the app's SCRAM user."""
    assert broker.settings.broker_sasl_port is not None
    broker.provision_scram_user(USER, password)
    return broker


def _client_settings(settings: LocalSettings, warehouse: Path, password: str) -> Settings:
    return settings.model_copy(
        update={
            "bootstrap_servers": f"127.0.0.1:{settings.broker_sasl_port}",
            "kafka_options": SASL_OPTIONS,
            "kafka_password": SecretStr(password),
            "warehouse": warehouse,
        }
    )


def _run_cli(client: Settings, password: str, args: list[str]) -> tuple[int, str, list[str]]:
    """Run ``eventlake <args>`` with the credentials in its environment (as a worker
    has them) while watching every process's command line for the password."""
    env = dict(
        os.environ,
        EVENTLAKE_BOOTSTRAP_SERVERS=client.bootstrap_servers,
        EVENTLAKE_KAFKA_OPTIONS=json.dumps(SASL_OPTIONS),
        EVENTLAKE_KAFKA_PASSWORD=password,
        EVENTLAKE_WAREHOUSE=str(client.warehouse),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "eventlake.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    leaked_in_cmdline: list[str] = []
    watching = threading.Event()

    def watch_command_lines() -> None:
        while not watching.wait(0.2):
            for proc in psutil.process_iter(["cmdline"]):
                if password in " ".join(proc.info["cmdline"] or []):
                    leaked_in_cmdline.append(" ".join(proc.info["cmdline"]))

    watcher = threading.Thread(target=watch_command_lines, daemon=True)
    watcher.start()
    output, _ = process.communicate(timeout=600)
    watching.set()
    watcher.join()
    return process.returncode, output, leaked_in_cmdline


def test_ingest_over_scram_without_leaking_the_password(
    secured_broker: LocalBroker,
    settings: LocalSettings,
    password: str,
    tmp_path: Path,
    topic_name: str,
) -> None:
    client = _client_settings(settings, tmp_path / "warehouse", password)
    create_topic(client, topic_name)
    produce_all(client, topic_name, [(b"k", b"v", binary_headers("sasl-1"))])

    returncode, output, leaked_in_cmdline = _run_cli(
        client, password, ["ingest", "--topic", topic_name]
    )

    assert returncode == 0, output
    assert "events=1" in output
    assert password not in output
    assert leaked_in_cmdline == []
    assert password not in secured_broker.log_file.read_text(errors="replace")


def test_republish_over_scram_without_leaking_the_password(
    secured_broker: LocalBroker,
    settings: LocalSettings,
    password: str,
    tmp_path: Path,
    topic_name: str,
) -> None:
    client = _client_settings(settings, tmp_path / "warehouse", password)
    create_topic(client, topic_name)
    headers = [*binary_headers("sasl-2"), ("ce_partitionkey", b"customer-7")]
    produce_all(client, topic_name, [(b"random", b"v", headers)])
    target = f"{topic_name}.keyed"

    returncode, output, leaked_in_cmdline = _run_cli(
        client,
        password,
        ["republish", "--source", topic_name, "--target", target, "--key-mapper", "partitionkey"],
    )

    assert returncode == 0, output
    assert "republished=1" in output
    assert password not in output
    assert leaked_in_cmdline == []
    consumer = Consumer(
        {**client.kafka_client_options(), "group.id": f"check-{topic_name}",
         "auto.offset.reset": "earliest"}
    )  # fmt: skip
    consumer.subscribe([target])
    message = None
    for _ in range(60):
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            break
    consumer.close()
    assert message is not None and message.error() is None
    assert (message.key(), message.value()) == (b"customer-7", b"v")
    assert password not in secured_broker.log_file.read_text(errors="replace")


def test_wrong_password_is_a_clear_authentication_error(
    secured_broker: LocalBroker, spark: SparkSession, settings: LocalSettings, tmp_path: Path
) -> None:
    client = _client_settings(settings, tmp_path / "warehouse", "not-the-password")
    with pytest.raises(
        KafkaConnectionError, match="refused the credentials of user 'eventlake-app'"
    ):
        run_ingest(spark, client, IngestRequest(topics=("anything",)))
