"""Whether the broker answers: the check every job makes before Spark starts, and the
sentence a lost connection becomes.

Example:
    >>> check_connection(load_settings(bootstrap_servers="127.0.0.1:9092"))
"""

from __future__ import annotations

import sys
import time
from typing import Final

from confluent_kafka.admin import AdminClient

from eventlake.core.errors import TryAgainLater
from eventlake.core.settings import Settings
from eventlake.kafka.clients import client_options


class KafkaConnectionError(TryAgainLater, RuntimeError):
    """The cluster cannot be reached or refuses our credentials; says what to check."""


#: After this long without an answer, :func:`check_connection` says it is waiting.
WAITING_SAID_AFTER_SECONDS: Final = 2.0


def check_connection(settings: Settings, timeout: float = 15.0) -> None:
    """Fail fast with a clear message when the cluster is unreachable or the credentials
    are wrong, rather than letting a Spark job retry until it times out.

    Example:
        >>> check_connection(settings)  # returns quietly when the cluster answers
    """
    from confluent_kafka import KafkaException

    errors: list[str] = []
    config = client_options(settings)
    config["error_cb"] = lambda error: errors.append(str(error))
    config["log_level"] = 0  # this probe reports what went wrong itself
    admin = AdminClient(config)
    failure: str | None = None
    started = time.monotonic()
    said_waiting = False
    while True:
        try:
            admin.list_topics(timeout=1.0)
            failure = None
            break
        except KafkaException as error:
            failure = str(error)
        admin.poll(0)  # serves error_cb, which carries authentication failures
        waited = time.monotonic() - started
        if any("AUTHENTICATION" in e.upper() for e in errors) or waited > timeout:
            break
        if not said_waiting and waited > WAITING_SAID_AFTER_SECONDS:
            # A broker that restarts answers again within seconds: worth the wait, said once.
            print(
                f"Kafka at {settings.bootstrap_servers} does not answer yet; waiting up to "
                f"{timeout:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            said_waiting = True
    auth = [e for e in [*errors, failure or ""] if "AUTHENTICATION" in e.upper()]
    if auth:
        user = settings.kafka_options.get("sasl.username", "?")
        raise KafkaConnectionError(
            f"Kafka at {settings.bootstrap_servers} refused the credentials of user {user!r} "
            f"({auth[0]}). Check EVENTLAKE_KAFKA_OPTIONS (sasl.mechanism, sasl.username) and "
            "EVENTLAKE_KAFKA_PASSWORD."
        )
    if failure is not None:
        detail = errors[0] if errors else failure
        raise KafkaConnectionError(
            f"Kafka at {settings.bootstrap_servers} did not answer within {timeout:.0f}s "
            f"({detail}). Is the broker running (`eventlake broker status`) and is "
            "EVENTLAKE_BOOTSTRAP_SERVERS right?"
        )


#: Texts of Java client and Spark errors that mean Kafka did not answer in time.
_CONNECTION_FAILURES: Final = (
    "org.apache.kafka.common.errors.TimeoutException",
    "org.apache.kafka.common.errors.DisconnectException",
    "org.apache.kafka.common.errors.NetworkException",
    "Timed out waiting for a node assignment",
    "Cannot fetch record for offset",
    "Failed to get records for",
)


def connection_lost_error(
    settings: Settings, error: BaseException, *, resume: str
) -> KafkaConnectionError | None:
    """Explain a run that failed while Kafka was unreachable, instead of a stack trace.

    After a failed run, probe the cluster: when it does not answer (or refuses the
    credentials), or the failure came from a Kafka timeout, return an error that says
    so, what to check, and ``resume`` (how a rerun picks up). Otherwise None: the
    failure had another cause.

    Example:
        >>> raise connection_lost_error(settings, error, resume="Rerun the command.") from error
    """
    lines = str(error).splitlines()
    cause = next(
        (line.strip()[:300] for line in lines if any(m in line for m in _CONNECTION_FAILURES)),
        None,
    )
    try:
        check_connection(settings, timeout=10.0)
    except KafkaConnectionError as probe:
        return KafkaConnectionError(
            f"The run stopped because Kafka became unreachable: {probe} {resume}"
        )
    if cause is None:
        return None
    return KafkaConnectionError(
        f"The run stopped because it lost the connection to Kafka at "
        f"{settings.bootstrap_servers} ({cause}); the cluster answers again now, so it "
        f"was restarted or the network was down. {resume}"
    )
