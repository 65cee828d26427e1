"""The settings of an Airflow task: the worker's ``EVENTLAKE_*`` environment with the
Airflow connections in place: Kafka from ``kafka_default``
(:mod:`~eventlake.orchestration.kafka_connection`) and the warehouse's object store
from ``aws_default`` (:mod:`~eventlake.orchestration.object_store_connection`), each
when it is defined.

Example:
    >>> task_settings().bootstrap_servers  # kafka_default: {"bootstrap.servers": "kafka:9094"}
    'kafka:9094'
"""

from __future__ import annotations

import os

from eventlake.core.settings import Settings, load_settings
from eventlake.orchestration.kafka_connection import (
    KAFKA_CONN_ID,
    read_kafka_connection,
    with_kafka_connection,
)
from eventlake.orchestration.object_store_connection import (
    AWS_CONN_ID,
    read_object_store_connection,
    with_object_store_connection,
)


def task_settings(kafka_conn_id: str = KAFKA_CONN_ID, aws_conn_id: str = AWS_CONN_ID) -> Settings:
    """The settings of a task on this worker, with the connections' fields.

    The object store's also go into this process's environment, which the warehouse's
    store reads (:func:`eventlake.storage.s3_store.connection`): a plan task's "nothing
    to land" check and the status page read the warehouse as the job will. A task is a
    process of its own; nothing but the task reads that environment.

    Example:
        >>> task_settings().s3_endpoint  # aws_default: {"endpoint_url": "http://s3:9000"}
        'http://s3:9000'
    """
    settings = with_kafka_connection(load_settings(), read_kafka_connection(kafka_conn_id))
    store = read_object_store_connection(aws_conn_id)
    if store is not None:
        os.environ.update(store.environment())
    return with_object_store_connection(settings, store)
