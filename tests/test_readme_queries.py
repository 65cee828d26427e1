"""The SQL examples of docs/querying.md (and the README's, which are some of them), run
against events landed from the real broker through eventlake's views (the shell and
Python snippets run from a new shell: tests/test_docs_commands.py)."""

from __future__ import annotations

import json
import re
from decimal import Decimal

from pyspark.sql import SparkSession

from eventlake.core.settings import PROJECT_ROOT, Settings
from eventlake.kafka.clients import Record
from eventlake.local.broker import LocalBroker
from eventlake.views.query import register_tables
from tests.helpers import binary_headers, land

PAID = "com.example.order.paid"


def _blocks(language: str, document: str = "docs/querying.md") -> list[str]:
    text = (PROJECT_ROOT / document).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_readmes_queries_are_those_of_the_querying_guide() -> None:
    # Run below through the guide's blocks: the README's must be among them, verbatim.
    assert set(_blocks("sql", "README.md")) <= set(_blocks("sql"))


def _event(n: int, event_type: str, subject: str, time: str, amount: float) -> Record:
    headers = binary_headers(f"e{n}", type_=event_type)
    headers += [
        ("ce_subject", subject.encode()),
        ("ce_time", time.encode()),
        ("content-type", b"application/json"),
    ]
    return (subject.encode(), json.dumps({"amount": amount}).encode(), headers)


def test_the_readmes_queries_run_and_answer(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    land(
        spark,
        warehouse_settings,
        topic_name,
        [
            _event(1, PAID, "order/1", "2026-01-01T10:15:00Z", 5.5),
            _event(2, PAID, "order/1", "2026-01-01T11:20:00Z", 7.25),
            _event(3, PAID, "order/2", "2026-01-01T10:40:00Z", 1.0),
            _event(4, PAID, "order/3", "2026-11-26T08:00:00Z", 100.0),
            _event(5, "com.example.order.created", "order/2", "2026-01-01T10:05:00Z", 0),
        ],
    )
    register_tables(spark, warehouse_settings)
    per_hour, paid, latest = _blocks("sql")

    hours = [(r["type"], r["hour"].hour, r["events"]) for r in spark.sql(per_hour).collect()]
    assert hours == [
        ("com.example.order.created", 10, 1),
        (PAID, 10, 2),
        (PAID, 11, 1),
    ]
    assert spark.sql(paid).first()["paid"] == Decimal("13.75")
    rows = {r["subject"]: r["amount"] for r in spark.sql(latest).collect()}
    assert rows == {"order/1": Decimal("7.25"), "order/2": Decimal("1.00"), "order/3": 100}
