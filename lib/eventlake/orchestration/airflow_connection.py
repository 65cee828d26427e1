"""One Airflow connection by id, of the type eventlake expects, or None when it is not
defined: the shared first step of reading ``kafka_default`` and ``aws_default``.

Example:
    >>> find_connection("aws_default", "aws", "the object store (login and password the keys)")
    Connection(conn_id='aws_default', conn_type='aws', ...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlake.orchestration.errors import OrchestrationError

if TYPE_CHECKING:
    from airflow.sdk import Connection


def find_connection(conn_id: str, conn_type: str, holds: str) -> Connection | None:
    """The connection ``conn_id`` (the metadata DB, an ``AIRFLOW_CONN_<ID>`` variable or
    a secrets backend), or None when none is defined. Raises :class:`OrchestrationError`
    when it is not of ``conn_type``; ``holds`` says what eventlake reads from it."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None
    if connection.conn_type != conn_type:
        raise OrchestrationError(
            f"Airflow connection {conn_id!r} is of type {connection.conn_type!r}; eventlake "
            f"reads {holds} from a connection of type {conn_type!r}."
        )
    return connection
