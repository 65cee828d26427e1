"""What a job's driver does, which sizes its JVM (:func:`eventlake.spark.conf.driver_memory`,
:func:`eventlake.spark.conf.driver_jvm_options`). No pyspark here: the CLI names the work of
a job before it starts Spark, and commands that start none load no pyspark.

Example:
    >>> from eventlake.core.driver_work import DriverWork, ingest_driver_work
    >>> ingest_driver_work(state=True, dedup=False) is DriverWork.GENERAL
    True
"""

from __future__ import annotations

from enum import StrEnum


class DriverWork(StrEnum):
    """What a job's driver does, which sizes its JVM
    (:func:`eventlake.spark.conf.driver_jvm_options`,
    :func:`eventlake.spark.conf.driver_memory`)."""

    #: Anything not below: the settings' memory, the GC's own young generation.
    GENERAL = "general"
    #: Lands records and keeps nothing across them (ingest without ``--state`` and
    #: ``--dedup``): a fixed young generation on a local master.
    LANDING = "landing"
    #: The quality check: aggregates over a table, with ``settings.quality_driver_memory``.
    CHECKING = "checking"


def ingest_driver_work(*, state: bool, dedup: bool) -> DriverWork:
    """The :class:`DriverWork` of an ingest: a landing unless it keeps a state table
    (``--state``) or a dedup window (``--dedup``). The one rule for the CLI, the DAG's
    plan and the bench. (A 768m driver for ``--state`` was measured and not kept: 5M
    records in one batch took 117-130 s against 92-102 s, docs/benchmarks.md.)

    Example:
        >>> ingest_driver_work(state=False, dedup=False)
        <DriverWork.LANDING: 'landing'>
        >>> ingest_driver_work(state=True, dedup=False)
        <DriverWork.GENERAL: 'general'>
    """
    return DriverWork.GENERAL if state or dedup else DriverWork.LANDING
