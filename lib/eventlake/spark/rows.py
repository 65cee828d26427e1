"""Rows on the driver and DataFrames held once: a row as plain Python values, a
DataFrame computed once and released.

Example:
    >>> held = computed_once(frame); ...; release(held)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, StructType


def plain_row(value: Any, data_type: DataType) -> Any:
    """``value`` as Arrow reads a value of ``data_type``: structs given as tuples become dicts.

    Example:
        >>> plain_row(("orders", 3), StructType([...]))
        {'topic': 'orders', 'n': 3}
    """
    if value is None:
        return None
    if isinstance(data_type, StructType):
        fields = (
            value if isinstance(value, Mapping) else dict(zip(data_type.names, value, strict=True))
        )
        return {f.name: plain_row(fields.get(f.name), f.dataType) for f in data_type}
    if isinstance(data_type, ArrayType):
        return [plain_row(item, data_type.elementType) for item in value]
    return value


def local_rows(
    spark: SparkSession, rows: Sequence[Mapping[str, Any] | Sequence[Any]], schema: StructType
) -> DataFrame:
    """A frame of a few rows held by the driver (tuples or dicts in ``schema``'s order),
    handed to the JVM as one Arrow table: ``createDataFrame`` of a Python list starts
    Python workers on the executors to unpickle it (~1-3 s on this 2-core machine), and
    building the rows from Column literals costs a py4j call per value (1.8 s for the 21
    rows of a quality run's results).

    Example:
        >>> local_rows(spark, [("orders", 3)], StructType([...])).collect()
        [Row(topic='orders', n=3)]
    """
    if not rows:
        return spark.range(0).select(F.inline(F.array().cast(ArrayType(schema))))
    import pyarrow as pa  # only the quality check's results need it; ingest never does

    table = pa.Table.from_pylist([plain_row(row, schema) for row in rows])
    # Spark casts the inferred Arrow types (nulls, int64) to the schema's.
    return spark.createDataFrame(table, schema)


def computed_once(rows: DataFrame, *, on_disk: bool = False) -> DataFrame:
    """``rows`` computed now, in one Spark job, and held (memory, then local disk; with
    ``on_disk``, serialized on local disk only); every later read takes the held rows.
    Free them with :func:`release`.

    A local checkpoint, not ``persist``: building Spark's columnar cache of a batch of
    ~1 KB events cost more than the batch's decode (GC of the growing column buffers),
    and a checkpointed plan is a plain scan that Delta can plan again as it likes.
    ``on_disk`` is for rows larger than the driver's memory (a whole batch): they
    are written once as serialized blocks, and the JVM's heap does not hold them.

    Example:
        >>> held = computed_once(decode_records(batch), on_disk=True)
        >>> held.where("reject_reason IS NULL").count()
        >>> release(held)
    """
    if on_disk:
        return rows.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    return rows.localCheckpoint(eager=True)


def release(held: DataFrame) -> None:
    """Free the rows :func:`computed_once` held for ``held`` (or for the frames it was
    derived from) now rather than when the JVM collects them; none of those frames can
    be read after this.

    Example:
        >>> release(held.where("kafka_offset > 10"))
    """
    # A checkpointed frame's plan is a LogicalRDD over the RDD whose blocks hold the
    # rows; a derived frame has it among its leaves. A Spark internal
    # (eventlake.core.engine_internals lists it with its test).
    leaves = held._jdf.queryExecution().analyzed().collectLeaves()
    for index in range(leaves.size()):
        leaf = leaves.apply(index)
        if leaf.getClass().getSimpleName() == "LogicalRDD":
            leaf.rdd().unpersist(True)
