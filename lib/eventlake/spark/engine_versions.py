"""The Spark internals eventlake relies on, and the Spark versions each was checked with.

A few speed-ups and safety nets use what Spark does not promise to keep: each sits in one
small function, listed in :data:`SPARK_INTERNALS` with the test that exercises it. An
upgrade of Spark fails ``tests/spark/test_engine_versions.py`` with a sentence naming every
internal and its test, until they pass and the version is added to
:data:`CHECKED_SPARK_VERSIONS`. Delta's internals (the ledger's commits through its
transaction API, maintenance's ``vacuum.retentionWindowIgnore.enabled``) have their own
guard: :data:`eventlake.ledger.commits.CHECKED_DELTA_VERSIONS`, refused at run time as well.

Example:
    >>> unchecked_spark("4.1.3")
    >>> unchecked_spark("4.2.0")
    'pyspark 4.2.0 is not a version eventlake's use of Spark internals was checked with ...'
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from typing import Final

#: pyspark versions every entry of :data:`SPARK_INTERNALS` was checked with.
CHECKED_SPARK_VERSIONS: Final = frozenset({"4.1.3"})


@dataclass(frozen=True)
class Internal:
    """One use of a Spark internal: where it is, what it relies on, the test that checks it."""

    function: str
    relies_on: str
    test: str


SPARK_INTERNALS: Final = (
    Internal(
        "eventlake.binding.reason_counts.optimizer_barrier",
        "the optimizer pushes no filter through Dataset.observe's CollectMetrics node",
        "tests/binding/test_decode.py::test_a_filter_on_the_reason_does_not_run_the_decoder_twice",
    ),
    Internal(
        "eventlake.binding.reason_counts.observed_values",
        "Observation._jo, the JVM observation whose future says whether a job filled it",
        "tests/binding/test_reason_counts.py::test_counts_of_a_frame_no_action_ran_over_are_an_error_not_a_wait",
    ),
    Internal(
        "eventlake.spark.kafka.write_to_kafka",
        "spark.sql.sources.useV1SourceList without kafka sends the Kafka sink through "
        "DataSource V2, where Dataset.observe sees its rows",
        "tests/republish/test_run.py::test_summary_line_counts_read_republished_and_rejected",
    ),
    Internal(
        "eventlake.spark.rows.release",
        "a local checkpoint's plan is a LogicalRDD leaf whose rdd() holds the blocks",
        "tests/spark/test_session.py::test_release_frees_the_rows_under_a_frame_derived_from_a_held_one",
    ),
    Internal(
        "eventlake.spark.session.ignore_sigterm_in_jvm",
        "PySpark's gateway JVM exits when its stdin from the Python process closes, and "
        "the JDK's sun.misc.Signal sets SIGTERM's disposition",
        "tests/runs/test_streaming.py::"
        "test_sigterm_to_the_whole_process_group_stops_the_stream_as_sigterm_to_it_does",
    ),
)


def unchecked_spark(version: str) -> str | None:
    """None when ``version`` of pyspark is one :data:`SPARK_INTERNALS` were checked with;
    otherwise what to check, internal by internal, before adding it.

    Example:
        >>> unchecked_spark("4.1.3") is None
        True
    """
    if version in CHECKED_SPARK_VERSIONS:
        return None
    listed = "; ".join(f"{i.function} ({i.relies_on}): {i.test}" for i in SPARK_INTERNALS)
    return (
        f"pyspark {version} is not a version eventlake's use of Spark internals was "
        f"checked with ({', '.join(sorted(CHECKED_SPARK_VERSIONS))}). Check each, then add "
        f"{version} to eventlake.spark.engine_versions.CHECKED_SPARK_VERSIONS: {listed}"
    )


def running_spark() -> str:
    """The pyspark version installed here."""
    return metadata.version("pyspark")
