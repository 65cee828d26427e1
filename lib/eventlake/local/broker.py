"""A real single-node Apache Kafka broker (KRaft, broker+controller) for local runs.

It runs from the jars that Maven put in ``infra/jars/kafka`` and keeps its data, log
and pid file under ``settings.broker_dir``. Start is idempotent and waits until the
broker answers a metadata request; stop is a clean shutdown (SIGTERM, then SIGKILL
only if the broker does not exit in time).

Example:
    >>> from eventlake.local.broker import LocalBroker
    >>> from eventlake.local.settings import load_local_settings
    >>> broker = LocalBroker(load_local_settings())
    >>> broker.start().running
    True
"""

from __future__ import annotations

import base64
import os
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from eventlake.core.errors import EventlakeError
from eventlake.local import processes
from eventlake.local.java_service import LocalJavaService, java_executable
from eventlake.local.settings import LocalSettings


class BrokerError(EventlakeError, RuntimeError):
    """The local broker could not be started or stopped; the message says why."""


@dataclass(frozen=True)
class BrokerStatus:
    """What ``eventlake broker status`` reports."""

    running: bool
    pid: int | None
    bootstrap_servers: str
    data_dir: Path
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return (
                f"broker running (pid {self.pid}) on {self.bootstrap_servers}; "
                f"data in {self.data_dir}, log in {self.log_file}"
            )
        return f"broker not running (would listen on {self.bootstrap_servers})"


class LocalBroker(LocalJavaService):
    """Start, stop and query the project-local Kafka broker."""

    what = "broker"
    record = "broker"
    error = BrokerError

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        self.home = settings.broker_dir
        self.data_dir = self.home / "data"
        self.log_file = self.home / "broker.log"
        self.pid_file = self.home / "broker.pid"
        self.config_file = self.home / "server.properties"
        self.bootstrap_servers = f"127.0.0.1:{settings.broker_port}"

    # -- queries ---------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self.bootstrap_servers

    def answers(self, timeout: float = 1.0) -> bool:
        return self.answers_metadata(timeout=timeout)

    def ports(self) -> dict[int, str]:
        return {
            self.settings.broker_port: "EVENTLAKE_BROKER_PORT",
            self.settings.controller_port: "EVENTLAKE_CONTROLLER_PORT",
        }

    def answers_metadata(self, timeout: float = 2.0) -> bool:
        """True when the broker answers a metadata request within the timeout."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        try:
            metadata = admin.list_topics(timeout=timeout)
        except Exception:
            return False
        return bool(metadata.brokers)

    def status(self) -> BrokerStatus:
        pid = self.pid()
        return BrokerStatus(
            running=pid is not None,
            pid=pid,
            bootstrap_servers=self.bootstrap_servers,
            data_dir=self.data_dir,
            log_file=self.log_file,
        )

    # -- start -----------------------------------------------------------------------------

    def _classpath(self) -> str:
        folder = self.settings.kafka_jars_dir
        if not any(folder.glob("kafka_2.13-*.jar")):
            raise BrokerError(
                f"Kafka broker jars missing in {folder}. Run `make jars` first "
                "(or set EVENTLAKE_KAFKA_JARS_DIR)."
            )
        return str(folder / "*")

    def _write_config(self) -> None:
        port = self.settings.broker_port
        controller = self.settings.controller_port
        listeners = f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}"
        advertised = f"PLAINTEXT://127.0.0.1:{port}"
        protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        sasl_port = self.settings.broker_sasl_port
        if sasl_port is not None:
            listeners += f",SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
            advertised += f",SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
            protocols += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        lines = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller}",
            "listeners": listeners,
            "advertised.listeners": advertised,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": protocols,
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            # One node: every internal topic gets a single replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Lets tests watch compaction happen within seconds on topics that ask for it.
            "log.cleaner.backoff.ms": "1000",
            "log.retention.check.interval.ms": "5000",
        }
        if sasl_port is not None:
            # Users come from the SCRAM credentials stored in the cluster metadata
            # (see provision_scram_user); the JAAS line holds no secret.
            lines["sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
            lines["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))

    def _format_storage(self, java: str, classpath: str) -> None:
        if (self.data_dir / "meta.properties").exists():
            return
        cluster_id = _kafka_cluster_id()
        processes.run_to_end(
            [
                java,
                "-cp",
                classpath,
                "kafka.tools.StorageTool",
                "format",
                # "=" form: an id may start with "-", which argparse would take for an option.
                f"--cluster-id={cluster_id}",
                "-c",
                str(self.config_file),
            ],
            what="Formatting the KRaft storage",
            error=BrokerError,
        )

    def prepared_command(self) -> list[str]:
        java, classpath = java_executable(BrokerError), self._classpath()
        self._write_config()
        self._format_storage(java, classpath)
        return [
            java,
            f"-Xmx{self.settings.broker_heap}",
            f"-Xms{self.settings.broker_heap}",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.log.kafka.log=warn",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-cp",
            classpath,
            "kafka.Kafka",
            str(self.config_file),
        ]

    def start(self, timeout: float = 60.0) -> BrokerStatus:
        """Start the broker unless it runs already; wait until it answers metadata requests."""
        self.launch(timeout)
        return self.status()

    def provision_scram_user(self, username: str, password: str) -> None:
        """Create or update a SCRAM-SHA-512 user through the admin API on the plaintext
        listener, so the password never appears on a command line or in a config file."""
        from confluent_kafka.admin import (
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        upsert = UserScramCredentialUpsertion(
            username, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
        )
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)

    def kill(self) -> None:
        """SIGKILL the broker (fault injection); its pid file stays stale until next query."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            processes.wait_gone([pid])


def _kafka_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
