"""The queries users write most, timed the old way and the new way in one run (issue 35).

    python tests/benchmarks/query_bench.py                      # 5,000,000 events
    python tests/benchmarks/query_bench.py --records 200000 --repeats 1   # smoke run

Produces ``--records`` mixed ~1 KB CloudEvents (half binary, half structured; six
types; ``time`` spread over ``--days`` days; a subject per entity) to a topic on the
local broker, lands them with ``eventlake ingest`` (one bounded run, a whole process,
timed), then in one SparkSession with the tables registered as ``eventlake query`` does,
runs each query both ways, interleaved, ``--repeats`` times:

* (a) events per type and hour for one day;
* (b) the sum of ``amount`` of one type over one day: ``from_json`` on ``data`` against
  the typed view's ``amount`` column;
* (c) the latest ``amount`` per subject of one type: ``from_json`` against ``data_json``.

and two floors no query beats (:data:`FLOORS`): a query Delta answers by skipping every
file, and the count of (b)'s slice.

(a) reads no data, so both of its ways are the same SQL: the figure is there for the
layout comparison (issue 35 item 4, :func:`compare_layouts`): (a) and (b) on the events
table as ingest lays it out and on copies laid out for the (type, time) filters in files
of about ``--layout-file-mb`` (:data:`LAYOUTS`). Each figure is the median of the
repeats, the results of every way are checked equal, and the table's size on disk is
reported. Results: ``results/query-bench-<time>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

from eventlake.core.settings import PROJECT_ROOT
from eventlake.kafka.clients import Record
from eventlake.kafka.topics import delete_topics
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import load_local_settings
from eventlake.spark.session import build_spark_session
from eventlake.views.event_types import inferred_fields
from eventlake.views.query import register_tables
from eventlake.views.type_fields import fields_path, save_fields
from tests.benchmarks.bench import fill_topic
from tests.benchmarks.dedup_bench import bounded_ingest

TYPES: Final = tuple(
    f"com.example.order.{t}"
    for t in ("created", "paid", "packed", "shipped", "delivered", "returned")
)
START: Final = datetime(2026, 11, 20, tzinfo=UTC)
DAY: Final = "2026-11-22"
NEXT_DAY: Final = "2026-11-23"
PAID: Final = "com.example.order.paid"

QUERIES: Final = {
    "a_count_by_type_per_hour": {
        "old": f"""SELECT type, date_trunc('HOUR', time) AS hour, count(*) AS n FROM events
                   WHERE time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'
                   GROUP BY type, hour""",
        "new": f"""SELECT type, date_trunc('HOUR', time) AS hour, count(*) AS n FROM events
                   WHERE time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'
                   GROUP BY type, hour""",
    },
    "b_sum_of_a_json_field": {
        "old": f"""SELECT sum(from_json(CAST(data AS STRING), 'amount DECIMAL(10,2)').amount) AS s
                   FROM events WHERE type = '{PAID}'
                   AND time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'""",
        "new": f"""SELECT sum(amount) AS s FROM type_com_example_order_paid
                   WHERE time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'""",
        # The typed table: the same plain column, without data_json.
        "typed": f"""SELECT sum(amount) AS s FROM typed_com_example_order_paid
                   WHERE time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'""",
    },
    "c_latest_per_subject": {
        "old": f"""SELECT subject, max_by(from_json(CAST(data AS STRING),
                   'amount DECIMAL(10,2)').amount, time) AS amount
                   FROM events WHERE type = '{PAID}' GROUP BY subject""",
        "new": f"""SELECT subject, max_by(data_json:amount::DECIMAL(10,2), time) AS amount
                   FROM events WHERE type = '{PAID}' GROUP BY subject""",
    },
}


def query_records(count: int, *, days: int, seed: int = 7) -> Iterator[Record]:
    """~1 KB CloudEvents, half binary, half structured, ``time`` spread over ``days``."""
    rng = random.Random(seed)
    description = " ".join(rng.choice(("order", "parcel", "eu", "note")) for _ in range(190))
    step = timedelta(days=days) / max(count, 1)
    for n in range(count):
        entity = f"order-{rng.randrange(max(count // 10, 1)):07d}"
        attributes = {
            "id": f"{seed}-{n}",
            "source": f"/shop/{n % 7}",
            "type": TYPES[n % len(TYPES)],
            "subject": entity,
            "time": (START + step * n).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        data = {
            "order": entity,
            "amount": round(rng.random() * 500, 2),
            "n": n,
            "description": description[:700],
        }
        if n % 2 == 0:
            headers = [("ce_specversion", b"1.0"), ("content-type", b"application/json")]
            headers += [(f"ce_{k}", v.encode()) for k, v in attributes.items()]
            yield (entity.encode(), json.dumps(data).encode(), headers)
        else:
            body = {
                "specversion": "1.0",
                "datacontenttype": "application/json",
                **attributes,
                "data": data,
            }
            yield (
                entity.encode(),
                json.dumps(body).encode(),
                [("content-type", b"application/cloudevents+json")],
            )


#: What no query over ``events`` beats, timed in the same session: one Delta answers by
#: skipping every file (Spark's per-query cost: planning, the snapshot, one job), and the
#: count of (b)'s slice (reading its type and time columns, none of the data).
FLOORS: Final = {
    "query_that_skips_every_file": """SELECT count(*) FROM events
        WHERE time < TIMESTAMP '1970-01-02'""",
    "count_of_b_slice": f"""SELECT count(*) FROM events WHERE type = '{PAID}'
        AND time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'""",
}


#: The layout comparison's queries (a) and (b), the new way, on a table named ``{table}``.
LAYOUT_QUERIES: Final = {
    "a_count_by_type_per_hour": f"""SELECT type, date_trunc('HOUR', time) AS hour, count(*) AS n
        FROM {{table}} WHERE time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'
        GROUP BY type, hour""",
    "b_sum_of_a_json_field": f"""SELECT sum(data_json:amount::DECIMAL(10,2)) AS s FROM {{table}}
        WHERE type = '{PAID}' AND time >= TIMESTAMP '{DAY}' AND time < TIMESTAMP '{NEXT_DAY}'""",
}


#: The layouts compared with ingest's (issue 35 item 4), each a copy of the events table
#: in files of about ``--layout-file-mb``: small enough that a day of one type is a few
#: files, so that the comparison measures files skipped, not row groups.
LAYOUTS: Final = {
    "clustered": "CLUSTER BY (type, time) + OPTIMIZE",
    "sorted": "range-sorted by (type, time)",
}


def compare_layouts(spark: Any, warehouse: Path, repeats: int, file_mb: int = 8) -> dict[str, Any]:
    """Issue 35 item 4's measurement: the events table as ingest lays it out against
    copies in files of about ``file_mb`` MB laid out for the (type, time) filters
    (:data:`LAYOUTS`): Delta liquid clustering OPTIMIZEd with that file size, and the
    rows range-partitioned and sorted by (type, time). (a) and (b) on each, interleaved."""
    from delta.tables import DeltaTable

    rows = spark.read.format("delta").load(str(warehouse / "events"))
    size = folder_bytes(warehouse / "events")
    files = max(1, round(size / (file_mb * 1024 * 1024)))
    figures: dict[str, Any] = {"file_mb": file_mb, "seconds_to_lay_out": {}, "queries": {}}
    tables = {"plain": f"delta.`{warehouse / 'events'}`"}
    for layout in LAYOUTS:
        path = str(warehouse / f"events_{layout}")
        began = time.monotonic()
        if layout == "clustered":
            (
                DeltaTable.createIfNotExists(spark)
                .location(path)
                .addColumns(rows.schema)
                .clusterBy("type", "time")
                .execute()
            )
            rows.write.format("delta").mode("append").save(path)
            spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(file_mb << 20))
            spark.sql(f"OPTIMIZE delta.`{path}`")
            spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
        else:
            (
                rows.repartitionByRange(files, "type", "time")
                .sortWithinPartitions("type", "time")
                .write.format("delta")
                .save(path)
            )
        figures["seconds_to_lay_out"][layout] = round(time.monotonic() - began, 1)
        tables[layout] = f"delta.`{path}`"
    figures["files"] = {
        name: spark.sql(f"DESCRIBE DETAIL {table}").first()["numFiles"]
        for name, table in tables.items()
    }
    for name, sql in LAYOUT_QUERIES.items():
        times: dict[str, list[float]] = {layout: [] for layout in tables}
        answers: dict[str, Any] = {}
        for repeat in range(repeats):
            order = list(tables) if repeat % 2 == 0 else list(tables)[::-1]
            for layout in order:
                began = time.monotonic()
                answers[layout] = sorted(
                    tuple(r) for r in spark.sql(sql.format(table=tables[layout])).collect()
                )
                times[layout].append(time.monotonic() - began)
        medians = {layout: statistics.median(t) for layout, t in times.items()}
        figures["queries"][name] = {
            **{f"{layout}_seconds": round(m, 2) for layout, m in medians.items()},
            "same_answer": all(a == answers["plain"] for a in answers.values()),
        }
        print(
            f"layout {name}: " + ", ".join(f"{k} {m:.2f} s" for k, m in medians.items()),
            flush=True,
        )
    return figures


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(str(path)).rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument(
        "--no-layout", dest="layout", action="store_false", help="skip the layout comparison"
    )
    parser.add_argument(
        "--layout-file-mb",
        type=int,
        default=8,
        help="file size of the layouts compared with ingest's (default 8)",
    )
    parser.add_argument(
        "--layout-only",
        type=Path,
        help="only the layout comparison, on this warehouse of an earlier run (kept)",
    )
    args = parser.parse_args(argv)
    settings = load_local_settings()
    if args.layout_only is not None:
        spark = build_spark_session(
            settings.model_copy(update={"warehouse": args.layout_only}), app_name="layout-bench"
        )
        figures = compare_layouts(
            spark, args.layout_only.resolve(), args.repeats, args.layout_file_mb
        )
        print(json.dumps(figures, indent=2))
        return 0
    LocalBroker(settings).start()
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    topic = f"query-bench-{run_id.lower()}"
    warehouse = settings.warehouse.parent / f"query-bench-{run_id}"
    started = time.monotonic()
    fill_topic(settings, topic, query_records(args.records, days=args.days), compact=False)
    print(f"produced {args.records} records in {time.monotonic() - started:.0f} s", flush=True)
    # The same events landed without and with the typed tables (interleaved order: the
    # page cache warm for the second), the typed step's own seconds from its line.
    plain_seconds, _ = bounded_ingest(
        warehouse.with_name(warehouse.name + "-plain"), topic, dedup=False
    )
    ingest_seconds, lines = bounded_ingest(warehouse, topic, dedup=False, typed=True)
    typed_step_seconds = float(re.findall(r"^typed: .* seconds=([0-9.]+)$", lines, re.M)[-1])
    shutil.rmtree(warehouse.with_name(warehouse.name + "-plain"), ignore_errors=True)
    job_settings = settings.model_copy(update={"warehouse": warehouse})
    spark = build_spark_session(job_settings, app_name="query-bench")
    started = time.monotonic()
    register_tables(spark, job_settings)
    register_seconds = time.monotonic() - started
    # What `eventlake types` and maintenance keep, then a session that reads it.
    events = spark.read.format("delta").load(str(warehouse / "events"))
    save_fields(
        fields_path(warehouse),
        inferred_fields(spark, events, sample_hours=job_settings.type_sample_hours),
    )
    started = time.monotonic()
    register_tables(spark, job_settings)
    register_kept_seconds = time.monotonic() - started
    seconds: dict[str, dict[str, list[float]]] = {q: {w: [] for w in QUERIES[q]} for q in QUERIES}
    answers: dict[str, dict[str, Any]] = {q: {} for q in QUERIES}
    for repeat in range(args.repeats):
        for name, ways in QUERIES.items():
            order = tuple(ways) if repeat % 2 == 0 else tuple(reversed(ways))
            for way in order:
                began = time.monotonic()
                rows = spark.sql(ways[way]).collect()
                seconds[name][way].append(time.monotonic() - began)
                answers[name][way] = sorted(tuple(r) for r in rows)
            took = ", ".join(f"{way} {seconds[name][way][-1]:.2f} s" for way in ways)
            print(f"{name} round {repeat + 1}: {took}", flush=True)
    floors: dict[str, list[float]] = {name: [] for name in FLOORS}
    for _ in range(args.repeats):
        for name, sql in FLOORS.items():
            began = time.monotonic()
            spark.sql(sql).collect()
            floors[name].append(time.monotonic() - began)
    results: dict[str, Any] = {
        "run_id": run_id,
        "records": args.records,
        "repeats": args.repeats,
        "ingest_seconds": round(ingest_seconds, 1),
        "ingest_without_typed_seconds": round(plain_seconds, 1),
        "typed_step_seconds": round(typed_step_seconds, 1),
        "typed_step_share_of_ingest": round(typed_step_seconds / plain_seconds, 3),
        "register_views_seconds": round(register_seconds, 1),
        "register_views_from_kept_columns_seconds": round(register_kept_seconds, 1),
        "events_table_bytes": folder_bytes(warehouse / "events"),
        "queries": {},
        "floors": {name: round(statistics.median(v), 2) for name, v in floors.items()},
    }
    if args.layout:
        results["layout"] = compare_layouts(spark, warehouse, args.repeats, args.layout_file_mb)
    for name in QUERIES:
        old, new = (statistics.median(seconds[name][w]) for w in ("old", "new"))
        results["queries"][name] = {
            "old_seconds": round(old, 2),
            "new_seconds": round(new, 2),
            "speedup": round(old / new, 2),
            "same_answer": answers[name]["old"] == answers[name]["new"],
            "rows": len(answers[name]["new"]),
        }
        if "typed" in seconds[name]:
            typed = statistics.median(seconds[name]["typed"])
            results["queries"][name] |= {
                "typed_table_seconds": round(typed, 2),
                "typed_speedup_over_from_json": round(old / typed, 2),
                "typed_speedup_over_data_json": round(new / typed, 2),
                "typed_same_answer": answers[name]["typed"] == answers[name]["old"],
            }
    spark.stop()
    delete_topics(settings, [topic])
    shutil.rmtree(warehouse, ignore_errors=True)
    out = PROJECT_ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / f"query-bench-{run_id}.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        f"# Query benchmark {run_id}: {args.records} events, medians of {args.repeats}",
        "",
        "| query | from_json on data (s) | data_json / typed view (s) | speed-up | same answer |",
        "|---|---|---|---|---|",
    ]
    for name, figures in results["queries"].items():
        lines.append(
            f"| {name} | {figures['old_seconds']} | {figures['new_seconds']} | "
            f"{figures['speedup']} | {figures['same_answer']} |"
        )
    for name, figures in results["queries"].items():
        if "typed_table_seconds" in figures:
            lines.append(
                f"| {name}, typed table | {figures['old_seconds']} | "
                f"{figures['typed_table_seconds']} | {figures['typed_speedup_over_from_json']} "
                f"(over data_json: {figures['typed_speedup_over_data_json']}) | "
                f"{figures['typed_same_answer']} |"
            )
    lines += [
        "",
        f"ingest {results['ingest_without_typed_seconds']} s without typed tables, "
        f"{results['ingest_seconds']} s with them, of which the typed step "
        f"{results['typed_step_seconds']} s ({results['typed_step_share_of_ingest']} of the "
        "ingest without);",
        f"ingest {results['ingest_seconds']} s; views registered in "
        f"{results['register_views_seconds']} s (inferring), "
        f"{results['register_views_from_kept_columns_seconds']} s (columns kept by "
        "`eventlake types`); events table "
        f"{results['events_table_bytes'] / 1e6:.0f} MB on disk",
        "",
        "floors (s): " + ", ".join(f"{name} {value}" for name, value in results["floors"].items()),
    ]
    layout = results.get("layout")
    if layout is not None:
        names = ["plain", *LAYOUTS]
        lines += [
            "",
            f"Layouts (files of about {layout['file_mb']} MB; the new way on each):",
            "",
            "| layout query | as ingest lays it out (s) | "
            + " | ".join(f"{LAYOUTS[n]} (s)" for n in LAYOUTS)
            + " | same answer |",
            "|---|---|" + "---|" * len(LAYOUTS) + "---|",
        ]
        for name, figures in layout["queries"].items():
            cells = " | ".join(str(figures[f"{n}_seconds"]) for n in names)
            lines.append(f"| {name} | {cells} | {figures['same_answer']} |")
        lines += [
            "",
            f"files {layout['files']}; seconds to lay out {layout['seconds_to_lay_out']}",
        ]
    (out / f"query-bench-{run_id}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
