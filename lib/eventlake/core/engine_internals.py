"""Every engine internal eventlake relies on, and the engine versions each was checked with.

A few speed-ups and safety nets use what an engine does not promise to keep (a private
attribute, a conf Delta does not document, a provider's error text, a folder layout):
each sits in one small function, listed here with what it relies on and the test that
exercises it. An upgrade of one of these engines fails
``tests/core/test_engine_internals.py`` with a sentence naming every internal of that
engine and its test, until they pass and the version is added to
:data:`CHECKED_VERSIONS`. The ledger also refuses an unchecked delta-spark at run time
(:func:`eventlake.ledger.commits.check_delta_version`). No pyspark here: the versions
come from the installed distributions' metadata.

Example:
    >>> unchecked("pyspark", "4.1.3") is None
    True
    >>> unchecked("pyspark", "4.2.0")
    'pyspark 4.2.0 is not a version eventlake's use of its internals was checked with ...'
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from typing import Final

#: Per engine (its distribution's name), the versions every one of its internals below
#: was checked with.
CHECKED_VERSIONS: Final[dict[str, frozenset[str]]] = {
    "pyspark": frozenset({"4.1.3"}),
    "delta-spark": frozenset({"4.4.0"}),
    "great-expectations": frozenset({"1.24.1"}),
    "apache-airflow-providers-apache-spark": frozenset({"6.3.4"}),
    "apache-airflow-core": frozenset({"3.3.2"}),
}


@dataclass(frozen=True)
class Internal:
    """One use of an engine internal: the engine, where it is used, what it relies on and
    the test that checks it."""

    engine: str
    function: str
    relies_on: str
    test: str


INTERNALS: Final = (
    Internal(
        "pyspark",
        "eventlake.binding.reason_counts.optimizer_barrier",
        "the optimizer pushes no filter through Dataset.observe's CollectMetrics node",
        "tests/binding/test_decode.py::test_a_filter_on_the_reason_does_not_run_the_decoder_twice",
    ),
    Internal(
        "pyspark",
        "eventlake.binding.reason_counts.observed_values",
        "Observation._jo, the JVM observation whose future says whether a job filled it",
        "tests/binding/test_reason_counts.py::"
        "test_counts_of_a_frame_no_action_ran_over_are_an_error_not_a_wait",
    ),
    Internal(
        "pyspark",
        "eventlake.spark.kafka.write_to_kafka",
        "spark.sql.sources.useV1SourceList without kafka sends the Kafka sink through "
        "DataSource V2, where Dataset.observe sees its rows",
        "tests/republish/test_run.py::test_summary_line_counts_read_republished_and_rejected",
    ),
    Internal(
        "pyspark",
        "eventlake.spark.kafka.require_topic_pattern",
        "the session's py4j gateway (_jvm) reaches java.util.regex.Pattern, the regex "
        "dialect Spark's subscribePattern compiles",
        "tests/kafka/test_kafka.py::test_a_topic_pattern_java_cannot_compile_is_refused_in_a_sentence",
    ),
    Internal(
        "pyspark",
        "eventlake.spark.columns.built_once",
        "SparkContext._active_spark_context, the context a column expression is built in",
        "tests/spark/test_columns.py::test_columns_are_built_once_per_key_and_serve_any_frame",
    ),
    Internal(
        "pyspark",
        "eventlake.spark.rows.release",
        "a local checkpoint's plan is a LogicalRDD leaf whose rdd() holds the blocks",
        "tests/spark/test_session.py::test_release_frees_the_rows_under_a_frame_derived_from_a_held_one",
    ),
    Internal(
        "pyspark",
        "eventlake.spark.session.ignore_sigterm_in_jvm",
        "PySpark's gateway JVM exits when its stdin from the Python process closes, and "
        "the JDK's sun.misc.Signal sets SIGTERM's disposition",
        "tests/runs/test_streaming.py::"
        "test_sigterm_to_the_whole_process_group_stops_the_stream_as_sigterm_to_it_does",
    ),
    Internal(
        "pyspark",
        "eventlake.spark.session.task_failures_unlogged",
        "log4j 2's Configurator reached through the gateway (_jvm), and the loggers Spark "
        "logs a failed task's stack with",
        "tests/views/test_query.py::test_an_unknown_table_is_a_query_error_without_the_plan",
    ),
    Internal(
        "pyspark",
        "eventlake.runs.offset_log.logged_batch",
        "Spark's checkpoint layout: offsets/<batch> (version line, metadata, source "
        "offsets) and commits/<batch>",
        "tests/runs/test_offset_log.py::test_the_last_committed_batch_is_the_highest_in_commits",
    ),
    Internal(
        "delta-spark",
        "eventlake.ledger.commits.Ledger",
        "Delta's transaction API (OptimisticTransaction, SetTransaction) from lib/jvm's "
        "DeltaLedger",
        "tests/ledger/test_ledger.py::test_backfill_then_scheduled_run_lands_each_record_once",
    ),
    Internal(
        "delta-spark",
        "eventlake.warehouse.tables.MATERIALIZED_SOURCE_CONFS",
        "spark.databricks.delta.merge.materializeSource, an undocumented session conf",
        "tests/state/test_state.py::test_replayed_batch_does_not_merge_twice",
    ),
    Internal(
        "delta-spark",
        "eventlake.maintenance.delta_upkeep.RETENTION_ARGUMENT_IGNORED_CONF",
        "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled, an undocumented conf",
        "tests/maintenance/test_maintenance.py::"
        "test_vacuum_keeps_the_retention_asked_for_not_deltas_default",
    ),
    Internal(
        "great-expectations",
        "eventlake.quality.gx.judge",
        "an expectation's get_validation_dependencies and metrics_validate, GX's "
        "evaluation steps after it computes the metrics itself",
        "tests/quality/test_measure.py::test_counts_judged_by_gx_equal_gx_scanning_the_slice",
    ),
    Internal(
        "apache-airflow-providers-apache-spark",
        "eventlake.orchestration.dag_parts.job_refusal",
        "SparkSubmitHook's failure text: 'Cannot execute: ... Error code is: <n>.' and the "
        "last lines of spark-submit's output",
        "tests/dags/test_ingest_dag.py::test_a_run_the_job_refuses_fails_once_with_the_jobs_reason",
    ),
    Internal(
        "apache-airflow-providers-apache-spark",
        "eventlake.orchestration.dag_parts.KafkaSparkSubmitOperator",
        "SparkSubmitHook._build_spark_submit_command, asked where env_vars go",
        "tests/orchestration/test_dag_parts.py::test_the_guard_asks_the_providers_hook_where_env_vars_go",
    ),
    Internal(
        "apache-airflow-core",
        "eventlake.orchestration.status_page.status_app",
        "airflow.api_fastapi's requires_access_view, AccessView and get_auth_manager: the "
        "API server's own sign-in for a plugin's FastAPI app",
        "tests/dags/test_status_page.py::test_a_browser_not_signed_in_is_sent_to_airflows_login",
    ),
)


def unchecked(engine: str, version: str) -> str | None:
    """None when ``version`` of ``engine`` is one its internals were checked with;
    otherwise what to check, internal by internal, before adding it.

    Example:
        >>> unchecked("delta-spark", "4.4.0") is None
        True
    """
    if version in CHECKED_VERSIONS[engine]:
        return None
    listed = "; ".join(
        f"{i.function} ({i.relies_on}): {i.test}" for i in INTERNALS if i.engine == engine
    )
    return (
        f"{engine} {version} is not a version eventlake's use of its internals was "
        f"checked with ({', '.join(sorted(CHECKED_VERSIONS[engine]))}). Check each, then "
        f"add {version} to eventlake.core.engine_internals.CHECKED_VERSIONS: {listed}"
    )


def installed(engine: str) -> str:
    """The installed version of ``engine`` (a distribution's name).

    Example:
        >>> installed("pyspark")
        '4.1.3'
    """
    return metadata.version(engine)
