"""The warehouse's tables by name in a real Hive Metastore (the local service), read by a
plain ``spark-sql`` that knows only the metastore's address and Delta's jars."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from eventlake.core.locations import Location
from eventlake.core.settings import PROJECT_ROOT
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.local.metastore import LocalMetastore, pyspark_jars
from eventlake.local.settings import LocalSettings
from eventlake.storage.store import append_to_delta_table
from eventlake.warehouse.catalog import catalog_name, same_location
from tests.conftest import TEST_BROKER_PORT
from tests.helpers import binary_headers

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
#: The test metastore's port: beside the test broker's and S3 server's.
METASTORE_PORT = TEST_BROKER_PORT + 4


def test_catalog_names_follow_the_warehouse_layout() -> None:
    assert catalog_name("events", "eventlake") == "eventlake.events"
    assert catalog_name("dq_results", "lake") == "lake.dq_results"
    assert catalog_name("state/demo.Orders-v2", "eventlake") == "eventlake.state_demo_orders_v2"


def test_a_catalog_location_names_the_path_it_was_given() -> None:
    assert same_location("file:/wh/events", "/wh/events")
    assert same_location("s3a://b/wh/events", "s3a://b/wh/events/")
    assert not same_location("file:/wh/events", "s3a://b/wh/events")


@pytest.fixture(scope="module")
def metastore(
    settings: LocalSettings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalMetastore]:
    service = LocalMetastore(
        settings.model_copy(
            update={
                "metastore_dir": tmp_path_factory.mktemp("metastore"),
                "metastore_port": METASTORE_PORT,
            }
        )
    )
    service.start()
    yield service
    service.stop()


def _eventlake(env: dict[str, str], *args: str, code: int = 0) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "eventlake.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == code, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


def _plain_spark_sql(uri: str, folder: Path, sql: str) -> list[str]:
    """``spark-sql`` with Delta's jars and the metastore's address only (no eventlake)."""
    jars = sorted(str(p) for p in (PROJECT_ROOT / "infra/jars/spark").glob("delta-*.jar"))
    env = {
        **os.environ,
        "SPARK_HOME": str(pyspark_jars().parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    result = subprocess.run(
        [
            str(PROJECT_ROOT / ".venv/bin/spark-sql"),
            "--jars", ",".join(jars),
            "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
            "--conf", f"spark.sql.catalog.spark_catalog={DELTA_CATALOG}",
            "--conf", "spark.sql.catalogImplementation=hive",
            "--conf", f"spark.hadoop.hive.metastore.uris={uri}",
            "--conf", f"spark.sql.warehouse.dir={folder / 'spark-sql'}",
            "--conf", "spark.ui.enabled=false",
            "-e", sql,
        ],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()


def test_ingest_and_reconcile_register_their_tables_and_a_plain_spark_sql_reads_them(
    broker: LocalBroker,
    settings: LocalSettings,
    metastore: LocalMetastore,
    topic_name: str,
    tmp_path: Path,
) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
    create_topic(own, topic_name, config={"cleanup.policy": "compact"})
    json_data = [("ce_datacontenttype", b"application/json")]
    records = [
        (f"k{n % 3}".encode(), b'{"amount": %d}' % n, [*binary_headers(f"e{n}"), *json_data])
        for n in range(7)
    ]
    produce_all(own, topic_name, [*records, (b"bad", b"x", [("ce_id", b"no-source")])])
    env = {
        **os.environ,
        "EVENTLAKE_WAREHOUSE": str(own.warehouse),
        "EVENTLAKE_BOOTSTRAP_SERVERS": own.bootstrap_servers,
        "EVENTLAKE_METASTORE_URI": metastore.uri,
        "EVENTLAKE_SHUFFLE_PARTITIONS": "2",
        "EVENTLAKE_TYPED_TABLES": "true",
    }

    # A second compacted topic whose state table only `eventlake reconcile` makes.
    rebuilt_topic = f"{topic_name}.r"
    create_topic(own, rebuilt_topic, config={"cleanup.policy": "compact"})
    produce_all(own, rebuilt_topic, [(b"a", b"{}", binary_headers("r1"))])

    _eventlake(env, "ingest", "--topic", topic_name, "--state")
    said = _eventlake(env, "reconcile", "--topic", rebuilt_topic)
    listed = _eventlake(env, "catalog")

    state = catalog_name(f"state/{topic_name}", "eventlake")
    rebuilt = catalog_name(f"state/{rebuilt_topic}", "eventlake")
    assert f"catalog: registered {rebuilt}" in said, said
    for name in ("eventlake.events", "eventlake.rejects", state, rebuilt, "eventlake.typed_t_test"):
        assert name in listed, listed
    # The ingest and the reconcile registered every table they made.
    assert "registered now" not in listed
    counts = _plain_spark_sql(
        metastore.uri,
        tmp_path,
        "SELECT count(*) FROM eventlake.events; SELECT count(*) FROM eventlake.rejects; "
        f"SELECT to_json(sort_array(collect_list(id))) FROM {state}; "
        f"SELECT to_json(collect_list(id)) FROM {rebuilt}; "
        "SELECT sum(amount) FROM eventlake.typed_t_test;",
    )
    assert counts[:2] == ["7", "1"]
    assert json.loads(counts[2]) == ["e4", "e5", "e6"]  # the latest record of each key
    assert json.loads(counts[3]) == ["r1"]
    assert counts[4] == "21"  # the typed table's plain column: 0 + 1 + ... + 6

    # Another warehouse on the same metastore and schema: its events would take the name
    # the first one's has. Said, not registered over it.
    other = tmp_path / "other-warehouse"
    append_to_delta_table(Location.of(other / "events"), pa.table({"id": ["x"]}))
    said = _eventlake({**env, "EVENTLAKE_WAREHOUSE": str(other)}, "catalog", code=1)
    assert f"registered for file:{own.warehouse}/events" in said, said
    assert "EVENTLAKE_METASTORE_SCHEMA" in said and "Traceback" not in said


def test_two_jobs_registering_one_warehouse_at_once_both_succeed(
    metastore: LocalMetastore, settings: LocalSettings, tmp_path: Path
) -> None:
    warehouse = tmp_path / "warehouse"
    for table in ("events", "rejects", "state/orders"):
        append_to_delta_table(Location.of(warehouse / table), pa.table({"id": ["x"]}))
    env = {
        **os.environ,
        "EVENTLAKE_WAREHOUSE": str(warehouse),
        "EVENTLAKE_METASTORE_URI": metastore.uri,
        "EVENTLAKE_METASTORE_SCHEMA": "raced",  # new: both create the schema, then tables
    }
    racers = [
        subprocess.Popen(
            [sys.executable, "-m", "eventlake.cli", "catalog"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=300)[0] for racer in racers]

    assert [racer.returncode for racer in racers] == [0, 0], "\n---\n".join(outputs)
    listed = _eventlake(env, "catalog")
    for name in ("raced.events", "raced.rejects", "raced.state_orders"):
        assert name in listed, listed
    assert "registered now" not in listed and "registered for" not in listed, listed
