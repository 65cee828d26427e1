"""OpenLineage run events of the jobs: dataset names, parent runs, and real ingest,
republish and check runs on the real broker, collected with the file transport."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings, load_settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.maintenance.request import MaintenanceRequest
from eventlake.maintenance.run import run_maintenance
from eventlake.quality import CheckRequest, QualityError, run_checks
from eventlake.quality.config import QualityConfig
from eventlake.republish import RepublishRequest, run_republish
from eventlake.runs.lineage import (
    PARENT_CONFS,
    Dataset,
    ParentRun,
    job_run,
    kafka_dataset,
    kafka_namespace,
    lineage_configured,
    parent_from_conf,
    parent_from_env,
    parse_run_id,
    table_dataset,
    warehouse_dataset,
)
from eventlake.state.reconcile import reconcile_state
from eventlake.warehouse.names import catalog_name, state_path
from tests.helpers import keyed_events, produce_events

PARENT_RUN_ID = "01936a9c-0000-7000-8000-000000000001"
ROOT_RUN_ID = "01936a9c-0000-7000-8000-000000000002"

# --- pure functions ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("servers", "namespace"),
    [
        ("127.0.0.1:9092", "kafka://127.0.0.1:9092"),
        ("b1:9092, b2:9092", "kafka://b1:9092"),
        ("SASL_SSL://b1.example:9093", "kafka://b1.example:9093"),
        ("user:secret@b1:9093", "kafka://b1:9093"),
    ],
)
def test_kafka_namespace_is_the_first_server_without_credentials(
    servers: str, namespace: str
) -> None:
    assert kafka_namespace(servers) == namespace


def test_kafka_dataset_is_named_by_topic() -> None:
    assert kafka_dataset("kafka:9092", "orders") == Dataset("kafka://kafka:9092", "orders")


@pytest.mark.parametrize(
    ("location", "dataset"),
    [
        ("/lake/events", Dataset("file", "/lake/events")),
        (Path("/lake/state/orders"), Dataset("file", "/lake/state/orders")),
        ("file:///lake/events", Dataset("file", "/lake/events")),
        ("s3a://bucket/lake/events", Dataset("s3://bucket", "lake/events")),
        ("gs://bucket/lake/events", Dataset("gs://bucket", "lake/events")),
        ("hdfs://nn:8020/lake/events", Dataset("hdfs://nn:8020", "/lake/events")),
        (
            "abfss://c@acct.dfs.core.windows.net/x",
            Dataset("abfss://acct.dfs.core.windows.net", "/x"),
        ),
    ],
)
def test_table_dataset_follows_the_naming_conventions(location: str, dataset: Dataset) -> None:
    assert table_dataset(location) == dataset


def test_a_relative_table_path_is_made_absolute() -> None:
    assert table_dataset("lake/events") == Dataset("file", str(Path.cwd() / "lake/events"))


def test_a_warehouse_table_has_its_catalog_name_only_with_a_metastore() -> None:
    plain = load_settings(warehouse="/lake")
    named = load_settings(warehouse="/lake", metastore_uri="thrift://u@ms1:9083,thrift://ms2:9083")

    assert warehouse_dataset(plain, "events").symlink is None
    dataset = warehouse_dataset(named, "state/demo.Orders")
    assert dataset == Dataset("file", "/lake/state/demo.Orders")  # a symlink is not a name
    assert dataset.symlink == Dataset("hive://ms1:9083", "eventlake.state_demo_orders")
    assert warehouse_dataset(named, "events").symlink == Dataset(
        "hive://ms1:9083", catalog_name("events", named.metastore_schema)
    )


@pytest.mark.parametrize(
    ("env", "configured"),
    [
        ({}, False),
        ({"OPENLINEAGE_URL": "http://marquez:5000"}, True),
        ({"OPENLINEAGE_CONFIG": "/etc/openlineage.yml"}, True),
        ({"OPENLINEAGE__TRANSPORT__TYPE": "console"}, True),
        ({"OPENLINEAGE__TRANSPORT__TYPE": ""}, False),
        ({"OPENLINEAGE_URL": "http://m", "OPENLINEAGE_DISABLED": "TRUE"}, False),
        ({"OPENLINEAGE_NAMESPACE": "prod"}, False),
    ],
)
def test_lineage_is_on_only_when_a_transport_is_configured(
    env: dict[str, str], configured: bool, tmp_path: Path
) -> None:
    assert lineage_configured({**env, "HOME": str(tmp_path)}, cwd=tmp_path) is configured


def test_an_openlineage_yml_in_the_working_folder_turns_lineage_on(tmp_path: Path) -> None:
    (tmp_path / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert lineage_configured({"HOME": str(tmp_path / "home")}, cwd=tmp_path)


def test_parent_from_the_confs_the_airflow_provider_injects() -> None:
    conf = dict(
        zip(
            PARENT_CONFS.values(),
            ["airflow", "dag.task", PARENT_RUN_ID, "airflow", "dag", ROOT_RUN_ID],
            strict=True,
        )
    )
    assert parent_from_conf(conf) == ParentRun(
        "airflow", "dag.task", PARENT_RUN_ID, "airflow", "dag", ROOT_RUN_ID
    )
    del conf["spark.openlineage.parentRunId"]
    assert parent_from_conf(conf) is None


def test_a_parent_without_root_is_its_own_root() -> None:
    parent = parent_from_env({"OPENLINEAGE_PARENT_ID": f"airflow/dag.task/{PARENT_RUN_ID}"})
    assert parent == ParentRun(
        "airflow", "dag.task", PARENT_RUN_ID, "airflow", "dag.task", PARENT_RUN_ID
    )


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("ns/a.b/1", ("ns", "a.b", "1")),
        ("ns/with/slash/1", ("ns", "with/slash", "1")),
        ("ns/1", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_run_id(text: str | None, parsed: tuple[str, str, str] | None) -> None:
    assert parse_run_id(text) == parsed


# --- real runs ----------------------------------------------------------------------


@pytest.fixture
def lineage_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """OpenLineage configured by its usual environment variables: the file transport,
    one JSON event per line."""
    path = tmp_path / "lineage" / "events.jsonl"
    path.parent.mkdir()
    for key in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(path))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    return path


@pytest.fixture
def parent_env(monkeypatch: pytest.MonkeyPatch) -> ParentRun:
    """A parent run given as the provider's lineage_parent_id macro renders it."""
    monkeypatch.setenv("OPENLINEAGE_PARENT_ID", f"airflow/eventlake_x.task/{PARENT_RUN_ID}")
    monkeypatch.setenv("OPENLINEAGE_ROOT_PARENT_ID", f"airflow/eventlake_x/{ROOT_RUN_ID}")
    return ParentRun(
        "airflow", "eventlake_x.task", PARENT_RUN_ID, "airflow", "eventlake_x", ROOT_RUN_ID
    )


@pytest.fixture
def parent_conf(spark: SparkSession) -> Iterator[ParentRun]:
    """A parent run given as Spark confs, as SparkSubmitOperator passes it with
    openlineage_inject_parent_job_info."""
    parent = ParentRun("airflow", "eventlake_republish.republish", PARENT_RUN_ID)
    values = [parent.namespace, parent.name, parent.run_id, "airflow", "eventlake_republish"]
    confs = dict(zip(list(PARENT_CONFS.values())[:5], values, strict=True))
    confs["spark.openlineage.rootParentRunId"] = ROOT_RUN_ID
    for key, value in confs.items():
        spark.conf.set(key, value)
    yield ParentRun(*values, ROOT_RUN_ID)
    for key in confs:
        spark.conf.unset(key)


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def runs_of(events: list[dict[str, Any]], job_prefix: str) -> list[dict[str, Any]]:
    return [e for e in events if e["job"]["name"].startswith(job_prefix)]


def datasets(event: dict[str, Any], side: str) -> set[tuple[str, str]]:
    return {(d["namespace"], d["name"]) for d in event[side]}


def assert_start_complete(events: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One START then one COMPLETE, of one run id."""
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    start, complete = events
    assert start["run"]["runId"] == complete["run"]["runId"]
    return start, complete


def assert_parent(event: dict[str, Any], parent: ParentRun) -> None:
    facet = event["run"]["facets"]["parent"]
    job, root = facet["job"], facet["root"]["job"]
    assert facet["run"]["runId"] == parent.run_id
    assert (job["namespace"], job["name"]) == (parent.namespace, parent.name)
    assert facet["root"]["run"]["runId"] == parent.root_run_id
    assert (root["namespace"], root["name"]) == (parent.root_namespace, parent.root_name)


def test_an_ingest_keeping_typed_tables_names_them_among_its_outputs(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    lineage_file: Path,
) -> None:
    settings = warehouse_settings.model_copy(update={"typed_tables": True})
    create_topic(settings, topic_name)
    produce_events(settings, topic_name, 4)
    run_ingest(spark, settings, IngestRequest(topics=(topic_name,)))
    _, complete = assert_start_complete(runs_of(read_events(lineage_file), "ingest."))
    assert ("file", str(settings.table_path("typed/t_test"))) in datasets(complete, "outputs")


def test_an_ingest_of_two_topics_is_a_run_per_topic_with_its_own_row_counts(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    lineage_file: Path,
) -> None:
    first, second = f"{topic_name}-a", f"{topic_name}-b"
    for topic in (first, second):
        create_topic(warehouse_settings, topic)
    produce_events(warehouse_settings, first, 8, invalid_every=4)  # 6 events, 2 rejects
    produce_events(warehouse_settings, second, 3)
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(first, second)))
    events = read_events(lineage_file)
    tables = [str(warehouse_settings.table_path(n)) for n in ("events", "rejects")]
    for topic, counts in ((first, [6, 2]), (second, [3, 0])):
        _, complete = assert_start_complete(runs_of(events, f"ingest.{topic}"))
        assert complete["job"]["name"] == f"ingest.{topic}"
        assert datasets(complete, "inputs") == {
            (kafka_namespace(warehouse_settings.bootstrap_servers), topic)
        }
        rows = {
            o["name"]: o["outputFacets"]["outputStatistics"]["rowCount"]
            for o in complete["outputs"]
        }
        assert [rows[t] for t in tables] == counts


def test_ingest_then_check_emit_start_and_complete_with_topic_tables_and_parent(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    lineage_file: Path,
    parent_env: ParentRun,
) -> None:
    settings = warehouse_settings
    create_topic(settings, topic_name)
    valid, invalid = produce_events(settings, topic_name, 12, invalid_every=4)
    run_ingest(spark, settings, IngestRequest(topics=(topic_name,)))
    run_checks(spark, settings, CheckRequest(full=True), config=QualityConfig())

    all_events = read_events(lineage_file)
    start, complete = assert_start_complete(runs_of(all_events, "ingest."))
    topic = (kafka_namespace(settings.bootstrap_servers), topic_name)
    tables = {("file", str(settings.table_path(n))) for n in ("events", "rejects")}
    for event in (start, complete):
        assert (event["job"]["namespace"], event["job"]["name"]) == (
            "eventlake",
            f"ingest.{topic_name}",
        )
        assert datasets(event, "inputs") == {topic}
        assert datasets(event, "outputs") == tables
        assert_parent(event, parent_env)
    rows = {
        o["name"]: o["outputFacets"]["outputStatistics"]["rowCount"] for o in complete["outputs"]
    }
    assert rows == {
        str(settings.table_path("events")): valid,
        str(settings.table_path("rejects")): invalid,
    }
    assert complete["job"]["facets"]["jobType"]["processingType"] == "BATCH"
    assert "kafka_password" not in json.dumps(all_events).lower()

    start, complete = assert_start_complete(runs_of(all_events, "check."))
    assert datasets(complete, "inputs") == tables
    assert datasets(complete, "outputs") == {("file", str(settings.table_path("dq_results")))}
    assert_parent(complete, parent_env)
    checked = next(i for i in complete["inputs"] if i["name"].endswith("/events"))
    assertions = checked["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert assertions and {a["name"] for a in assertions} == {topic_name}


def test_republish_emits_source_and_target_topics_with_the_parent_from_spark_conf(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    lineage_file: Path,
    parent_conf: ParentRun,
) -> None:
    settings = warehouse_settings
    create_topic(settings, topic_name)
    produce_events(settings, topic_name, 6)
    target = f"{topic_name}-out"
    request = RepublishRequest(
        source=topic_name, target=target, key_mapper="attribute:id", ending_offsets="latest"
    )
    run_republish(spark, settings, request)

    start, complete = assert_start_complete(runs_of(read_events(lineage_file), "republish."))
    namespace = kafka_namespace(settings.bootstrap_servers)
    for event in (start, complete):
        assert event["job"]["name"] == f"republish.{topic_name}>{target}"
        assert datasets(event, "inputs") == {(namespace, topic_name)}
        assert datasets(event, "outputs") == {
            (namespace, target),
            ("file", str(settings.table_path("rejects"))),
        }
        assert_parent(event, parent_conf)


def test_reconcile_then_maintain_emit_the_topic_and_the_tables_they_rewrite(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    lineage_file: Path,
) -> None:
    # With a metastore: the tables carry their catalog names. (This session's own catalog
    # registers them, in a schema of this test's: nothing connects to the URI.)
    schema = f"lineage_{topic_name[2:]}"
    settings = warehouse_settings.model_copy(
        update={"metastore_uri": "thrift://metastore.example:9083", "metastore_schema": schema}
    )
    create_topic(settings, topic_name, config={"cleanup.policy": "compact"})
    produce_all(settings, topic_name, keyed_events(["a", "b", "a"], tombstones=("b",)))
    try:
        reconcile_state(spark, settings, topic_name)
        assert spark.catalog.tableExists(catalog_name(f"state/{topic_name}", schema))
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    run_maintenance(spark, settings, MaintenanceRequest(dry_run=True), report=print)
    run_maintenance(spark, settings, MaintenanceRequest(), report=print)

    events = read_events(lineage_file)
    _, reconciled = assert_start_complete(runs_of(events, "reconcile."))
    state = {("file", str(state_path(settings, topic_name)))}
    assert reconciled["job"]["name"] == f"reconcile.{topic_name}"
    assert datasets(reconciled, "inputs") == {
        (kafka_namespace(settings.bootstrap_servers), topic_name)
    }
    assert datasets(reconciled, "outputs") == state
    assert "parent" not in reconciled["run"]["facets"]
    # The dry run emitted nothing; the real one reads and rewrites every table.
    _, maintained = assert_start_complete(runs_of(events, "maintain"))
    assert datasets(maintained, "inputs") == datasets(maintained, "outputs") == state
    named = {
        "namespace": "hive://metastore.example:9083",
        "name": catalog_name(f"state/{topic_name}", schema),
        "type": "TABLE",
    }
    for event, side in ((reconciled, "outputs"), (maintained, "inputs")):
        assert [d["facets"]["symlinks"]["identifiers"] for d in event[side]] == [[named]]


def test_a_table_with_a_catalog_name_carries_it_as_a_symlink_in_the_event(
    tmp_path: Path, lineage_file: Path
) -> None:
    settings = load_settings(warehouse=tmp_path / "wh", metastore_uri="thrift://ms:9083")
    topic = kafka_dataset("127.0.0.1:9092", "orders")
    with job_run(None, "ingest.orders", inputs=[topic], outputs=[
        warehouse_dataset(settings, "events"), table_dataset(tmp_path / "elsewhere")
    ]):  # fmt: skip
        pass

    for event in read_events(lineage_file):
        assert "facets" not in event["inputs"][0] or not event["inputs"][0]["facets"]
        elsewhere, events = sorted(event["outputs"], key=lambda d: d["name"])
        assert events["name"] == str(tmp_path / "wh" / "events")
        assert events["facets"]["symlinks"]["identifiers"] == [
            {"namespace": "hive://ms:9083", "name": "eventlake.events", "type": "TABLE"}
        ]
        assert not elsewhere.get("facets")


def test_a_failing_job_emits_fail_with_its_error(
    spark: SparkSession, warehouse_settings: Settings, lineage_file: Path
) -> None:
    with pytest.raises(QualityError):
        run_checks(spark, warehouse_settings, CheckRequest(), config=QualityConfig())
    events = read_events(lineage_file)
    assert [e["eventType"] for e in events] == ["START", "FAIL"]
    error = events[1]["run"]["facets"]["errorMessage"]
    assert error["message"].startswith("QualityError: No events table")
    assert error["programmingLanguage"] == "python"
    assert "parent" not in events[1]["run"]["facets"]


def test_a_transport_that_fails_warns_once_and_the_job_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from eventlake.runs.lineage import job_run

    # A file transport whose folder does not exist: every emit fails.
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(tmp_path / "no" / "f"))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    with job_run(None, "job") as run:
        done = run.enabled
    assert done
    warnings = [line for line in capsys.readouterr().err.splitlines() if "lineage:" in line]
    assert len(warnings) == 1 and warnings[0].startswith("lineage: WARNING could not emit")


def test_with_nothing_configured_nothing_is_emitted_or_imported(tmp_path: Path) -> None:
    """A fresh interpreter, no OPENLINEAGE_* settings: a job run imports no OpenLineage
    client and writes nothing (the working folder and HOME stay empty)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENLINEAGE")}
    env["HOME"] = str(tmp_path)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "lib")
    script = (
        "import sys\n"
        "from eventlake.runs.lineage import job_run\n"
        "with job_run(None, 'job', inputs=[]) as run:\n"
        "    pass\n"
        "print(run.enabled,\n"
        "      sorted(m for m in sys.modules if m.split('.')[0] in ('openlineage', 'airflow')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    enabled, imported = result.stdout.split(" ", 1)
    assert enabled == "False"
    # What costs start-up time is the imports: none of OpenLineage's or Airflow's.
    assert imported.strip() == "[]"
    assert list(tmp_path.iterdir()) == []
