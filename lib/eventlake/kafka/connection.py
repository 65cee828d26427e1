"""Whether the broker answers: the check every job makes before Spark starts, and the
sentence a lost connection becomes.

Example:
    >>> check_connection(load_settings(bootstrap_servers="127.0.0.1:9092"))
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_none,
)

from eventlake.core.errors import TryAgainLater
from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.kafka.clients import client_options

_log = progress_log(__name__)


class KafkaConnectionError(TryAgainLater, RuntimeError):
    """The cluster cannot be reached or refuses our credentials; says what to check."""


#: After this long without an answer, :func:`check_connection` says it is waiting.
WAITING_SAID_AFTER_SECONDS: Final = 2.0


#: The codes of the errors that say the cluster refused the credentials (librdkafka's
#: local SASL failure, and the broker's answer).
AUTHENTICATION_FAILURES: Final = frozenset(
    {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
)


def check_connection(settings: Settings, timeout: float = 15.0) -> None:
    """Fail fast with a clear message when the cluster is unreachable or the credentials
    are wrong, rather than letting a Spark job retry until it times out.

    Example:
        >>> check_connection(settings)  # returns quietly when the cluster answers
    """
    errors: list[KafkaError] = []
    config = client_options(settings)
    config["error_cb"] = errors.append
    config["log_level"] = 0  # this probe reports what went wrong itself
    admin = AdminClient(config)

    def ask() -> None:
        try:
            admin.list_topics(timeout=1.0)
        except KafkaException:
            admin.poll(0)  # serves error_cb, which carries authentication failures
            raise

    out_of_time = stop_after_delay(timeout)

    def given_up(state: RetryCallState) -> bool:
        # Refused credentials stay refused: no use asking again.
        refused = any(error.code() in AUTHENTICATION_FAILURES for error in errors)
        return refused or out_of_time(state)

    said_waiting = False

    def say_waiting(state: RetryCallState) -> None:
        nonlocal said_waiting
        if not said_waiting and (state.seconds_since_start or 0.0) > WAITING_SAID_AFTER_SECONDS:
            # A broker that restarts answers again within seconds: worth the wait, said once.
            _log.warning(
                f"Kafka at {settings.bootstrap_servers} does not answer yet; waiting up to "
                f"{timeout:.0f} s"
            )
            said_waiting = True

    failure: KafkaError | None = None
    try:
        Retrying(
            retry=retry_if_exception_type(KafkaException),
            stop=given_up,
            wait=wait_none(),  # each attempt waits up to a second for the metadata itself
            before_sleep=say_waiting,
            reraise=True,
        )(ask)
    except KafkaException as error:
        failure = error.args[0]
    auth = [
        str(e) for e in [*errors, failure] if e is not None and e.code() in AUTHENTICATION_FAILURES
    ]
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


@contextmanager
def connection_loss_explained(settings: Settings, *, resume: str) -> Iterator[None]:
    """Raise a failure of the block that came from Kafka going away as the
    :func:`connection_lost_error` that explains it (with ``resume``); others as they are.

    Example:
        >>> with connection_loss_explained(settings, resume="Rerun the command."):
        ...     run_job()
    """
    try:
        yield
    except Exception as error:
        lost = connection_lost_error(settings, error, resume=resume)
        if lost is not None:
            raise lost from error
        raise
