"""The warehouse's files on the S3 server, through the one store (eventlake.storage.store)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from eventlake.core.locations import Location
from eventlake.storage import s3_store, store


def test_a_text_written_is_read_back_and_a_missing_one_is_none(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_types" / "fields.json"
    assert store.read_text(where) is None
    store.write_text(where, '{"a": 1}')
    assert store.read_text(where) == '{"a": 1}'


def test_names_are_one_level_of_objects_and_prefixes(s3_warehouse: Location) -> None:
    for name in ("state/orders/_delta_log/0.json", "state/customers/x", "state/readme"):
        store.write_text(s3_warehouse / name, "")
    assert store.names(s3_warehouse / "state") == ["customers", "orders", "readme"]
    assert store.names(s3_warehouse / "nothing") == []
    assert store.any_name(s3_warehouse / "state", lambda name: name == "orders")
    assert not store.any_name(s3_warehouse / "state", str.isdigit)


def test_a_prefix_with_objects_is_a_folder_and_exists(s3_warehouse: Location) -> None:
    store.write_text(s3_warehouse / "events" / "_delta_log" / "0.json", "{}")
    assert store.is_folder(s3_warehouse / "events")
    assert store.exists(s3_warehouse / "events")
    assert store.exists(s3_warehouse / "events" / "_delta_log" / "0.json")
    assert not store.is_folder(s3_warehouse / "rejects")
    assert not store.exists(s3_warehouse / "rejects")


def test_a_tree_removed_leaves_its_siblings(s3_warehouse: Location) -> None:
    for name in ("a/1", "a/b/2", "ab/3"):
        store.write_text(s3_warehouse / name, "")
    store.remove_tree(s3_warehouse / "a")
    assert store.names(s3_warehouse) == ["ab"]


def test_modified_at_is_the_write_time(s3_warehouse: Location) -> None:
    where = s3_warehouse / "x"
    assert store.modified_at(where) is None
    store.write_text(where, "")
    written = store.modified_at(where)
    assert written is not None
    assert abs(written - datetime.now(UTC)) < timedelta(minutes=1)


def test_of_concurrent_creates_of_one_object_exactly_one_wins(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_ledger" / "orders.lease" / "00000000000000000000"
    won: list[str] = []
    start = threading.Barrier(4)

    def create(name: str) -> None:
        start.wait()
        if s3_store.create_text(where, name):
            won.append(name)

    writers = [threading.Thread(target=create, args=(f"w{i}",)) for i in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert len(won) == 1
    assert store.read_text(where) == won[0]


def test_a_create_of_an_object_that_holds_the_same_text_counts_as_ours(
    s3_warehouse: Location,
) -> None:
    """A retried PUT that meets its own first attempt: the object holds its text."""
    where = s3_warehouse / "turn"
    assert s3_store.create_text(where, "token-1")
    assert s3_store.create_text(where, "token-1")
    assert not s3_store.create_text(where, "token-2")


def test_delta_rs_writes_and_opens_a_table_on_the_server(s3_warehouse: Location) -> None:
    from deltalake import write_deltalake

    where = s3_warehouse / "events"
    options = store.storage_options(where)
    write_deltalake(str(where), pa.table({"n": [1, 2]}), storage_options=options)
    write_deltalake(str(where), pa.table({"n": [3]}), mode="append", storage_options=options)
    table = store.open_delta_table(where)
    assert table.version() == 1
    assert sorted(table.to_pyarrow_table()["n"].to_pylist()) == [1, 2, 3]
    assert store.names(where / "_delta_log")[:2] == [
        "00000000000000000000.json",
        "00000000000000000001.json",
    ]


def test_another_scheme_is_refused_in_a_sentence() -> None:
    with pytest.raises(store.UnsupportedStoreError, match="use a local folder or s3a://"):
        store.read_text("gs://bucket/wh/x")


def test_a_store_that_does_not_answer_is_one_sentence(
    s3_warehouse: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVENTLAKE_S3_ENDPOINT", "http://127.0.0.1:1")
    with pytest.raises(s3_store.ObjectStoreError, match="could not be reached"):
        store.read_text(s3_warehouse / "x")


def test_keys_the_store_refuses_are_one_sentence(
    s3_warehouse: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVENTLAKE_S3_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(s3_store.ObjectStoreError, match="refused the request"):
        store.names(s3_warehouse)


def test_a_working_copy_brings_the_files_and_sends_back_only_what_changed(
    s3_warehouse: Location,
) -> None:
    docs = s3_warehouse / "dq_docs"
    store.write_text(docs / "index.html", "old index")
    store.write_text(docs / "validations" / "run-1.json", "first run")
    with store.working_copy(docs) as local:
        assert (local / "validations" / "run-1.json").read_text() == "first run"
        (local / "index.html").write_text("new index")
        (local / "validations" / "run-2.json").write_text("second run")
        # Another host rewrites a file this copy did not change: it must stay theirs.
        store.write_text(docs / "validations" / "run-1.json", "rewritten elsewhere")
    assert store.read_text(docs / "index.html") == "new index"
    assert store.read_text(docs / "validations" / "run-2.json") == "second run"
    assert store.read_text(docs / "validations" / "run-1.json") == "rewritten elsewhere"


def test_a_failed_block_sends_nothing_back(s3_warehouse: Location) -> None:
    docs = s3_warehouse / "dq_docs"
    with pytest.raises(RuntimeError), store.working_copy(docs) as local:
        (local / "index.html").write_text("half written")
        raise RuntimeError("the check failed")
    assert not store.exists(docs / "index.html")


def test_rows_appended_by_delta_rs_land_in_a_table_on_the_server(s3_warehouse: Location) -> None:
    results = s3_warehouse / "dq_results"
    store.append_to_delta_table(results, pa.table({"check": ["row_count"], "ok": [True]}))
    store.append_to_delta_table(results, pa.table({"check": ["rejects_rate"], "ok": [False]}))
    table = store.open_delta_table(results)
    assert table.version() == 1
    assert sorted(table.to_pyarrow_table().column("check").to_pylist()) == [
        "rejects_rate",
        "row_count",
    ]
