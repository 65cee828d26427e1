"""The datasets of OpenLineage events, named by OpenLineage's naming conventions: a topic
is ``kafka://<host:port>`` (the first bootstrap server) and its name; a Delta table is
``file`` and its absolute path (or ``<scheme>://<authority>`` and the path for a
warehouse URI), and with a metastore also its catalog name, ``hive://<host:port>`` and
``<schema>.<table>``, as a symlink of type ``TABLE``. No pyspark, no OpenLineage client.

Example:
    >>> warehouse_dataset(load_settings(warehouse="/lake",
    ...                                 metastore_uri="thrift://ms:9083"), "events")
    Dataset(namespace='file', name='/lake/events', symlink=Dataset(namespace='hive://ms:9083',
    name='eventlake.events', symlink=None))
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from eventlake.core.locations import LocationLike
from eventlake.core.settings import Settings
from eventlake.warehouse.names import catalog_name


@dataclass(frozen=True, order=True)
class Dataset:
    """A dataset by OpenLineage's naming: where it lives (``namespace``) and its ``name``;
    for a warehouse table, its name in the catalog too (``symlink``, OpenLineage's
    ``symlinks`` facet), which does not make it another dataset.

    Example:
        >>> Dataset("kafka://kafka:9092", "orders")
        Dataset(namespace='kafka://kafka:9092', name='orders', symlink=None)
    """

    namespace: str
    name: str
    symlink: Dataset | None = field(default=None, compare=False)


def kafka_namespace(bootstrap_servers: str) -> str:
    """The namespace of a Kafka cluster's topics: ``kafka://`` and the first bootstrap
    server, without a listener name or user part (never a credential).

    Example:
        >>> kafka_namespace("SASL_SSL://user@b1.example:9093,b2.example:9093")
        'kafka://b1.example:9093'
    """
    first = bootstrap_servers.split(",")[0].strip()
    first = first.split("://", 1)[-1]
    return f"kafka://{first.rsplit('@', 1)[-1]}"


def kafka_dataset(bootstrap_servers: str, topic: str) -> Dataset:
    """The dataset of ``topic`` on the cluster of ``bootstrap_servers``.

    Example:
        >>> kafka_dataset("127.0.0.1:9092", "orders")
        Dataset(namespace='kafka://127.0.0.1:9092', name='orders')
    """
    return Dataset(kafka_namespace(bootstrap_servers), topic)


def table_dataset(location: LocationLike) -> Dataset:
    """The dataset of the Delta table at ``location``: a local path is ``file`` and its
    absolute path; a URI is ``<scheme>://<authority>`` and its path (for object stores,
    the key without its leading slash, as OpenLineage names S3 and GCS objects).

    Example:
        >>> table_dataset("/lake/events")
        Dataset(namespace='file', name='/lake/events')
        >>> table_dataset("s3a://bucket/lake/events")
        Dataset(namespace='s3://bucket', name='lake/events')
    """
    text = str(location)
    parts = urlsplit(text)
    if parts.scheme in ("", "file") or len(parts.scheme) == 1:  # one letter: a Windows drive
        path = parts.path if parts.scheme == "file" else text
        return Dataset("file", str(Path(path).absolute()))
    scheme = {"s3a": "s3", "s3n": "s3"}.get(parts.scheme, parts.scheme)
    name = parts.path.lstrip("/") if scheme in ("s3", "gs") else parts.path
    # A user part (user:password@) never reaches an event.
    return Dataset(f"{scheme}://{parts.netloc.rsplit('@', 1)[-1]}", name)


def metastore_namespace(metastore_uri: str) -> str:
    """The namespace of a Hive Metastore's tables: ``hive://`` and the first of its
    ``thrift://`` URIs' host and port, without a user part.

    Example:
        >>> metastore_namespace("thrift://user@ms1:9083,thrift://ms2:9083")
        'hive://ms1:9083'
    """
    first = metastore_uri.split(",")[0].strip()
    return f"hive://{urlsplit(first).netloc.rsplit('@', 1)[-1]}"


def warehouse_dataset(settings: Settings, table: str) -> Dataset:
    """The dataset of the warehouse table ``table`` (``events``, ``state/<topic>``, as
    :func:`~eventlake.warehouse.names.warehouse_tables` names them) by its path, with
    its catalog name (:func:`~eventlake.warehouse.names.catalog_name`) as its symlink
    when ``settings.metastore_uri`` is set: the name the jobs register it under.

    Example:
        >>> warehouse_dataset(load_settings(warehouse="/lake"), "state/orders")
        Dataset(namespace='file', name='/lake/state/orders', symlink=None)
    """
    dataset = table_dataset(settings.table_path(table))
    if not settings.metastore_uri:
        return dataset
    name = catalog_name(table, settings.metastore_schema)
    return replace(dataset, symlink=Dataset(metastore_namespace(settings.metastore_uri), name))
