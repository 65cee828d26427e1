"""The one opener of the warehouse's files: every read, write, listing and removal of a
file under the warehouse, and every Delta table opened without Spark (delta-rs, with the
location's storage options), goes through here.

Two stores sit behind it: the local file system (a warehouse folder) and S3
(``s3a://bucket/prefix``, :mod:`eventlake.storage.s3_store`); a location with another
scheme is refused in a sentence. Another object store is added here, not in callers.

Example:
    >>> read_text(settings.warehouse / "_types" / "fields.json") is None
    True
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eventlake.core.errors import Refused
from eventlake.core.locations import Location, LocationLike
from eventlake.storage import s3_store
from eventlake.storage.files import write_atomically


class UnsupportedStoreError(Refused, ValueError):
    """A warehouse location on a store eventlake cannot write yet."""


def on_object_store(location: LocationLike) -> Location | None:
    """``location`` when it is on S3, None when it is local; refused for other schemes.

    Example:
        >>> on_object_store("s3a://lake/wh"), on_object_store("/wh")
        (Location('s3a://lake/wh'), None)
    """
    where = Location.of(location)
    if where.is_local:
        return None
    if where.scheme in s3_store.S3_SCHEMES:
        return where
    raise UnsupportedStoreError(
        f"The warehouse location {str(where)!r} is on {where.scheme!r} storage, which "
        "eventlake does not write: use a local folder or s3a://bucket/prefix "
        "(EVENTLAKE_WAREHOUSE)."
    )


def local_path(location: LocationLike) -> Path:
    """``location`` as a local path; a ``file:`` URI's path, refused for other schemes.

    Example:
        >>> local_path("file:///wh/events")
        PosixPath('/wh/events')
    """
    where = Location.of(location)
    if on_object_store(where) is None:
        return where.local()
    raise UnsupportedStoreError(f"{where} is on object storage; this needs a local folder.")


def read_text(location: LocationLike) -> str | None:
    """The file's text (UTF-8), or None when there is no such file.

    Example:
        >>> read_text("/wh/events/_delta_log/00000000000000000000.json").splitlines()[0]
        '{"commitInfo": ...}'
    """
    if (remote := on_object_store(location)) is not None:
        return s3_store.read_text(remote)
    try:
        return local_path(location).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def write_text(location: LocationLike, text: str, *, mode: int = 0o644) -> None:
    """Replace the file with ``text`` whole or not at all (never half a document).

    Example:
        >>> write_text(settings.warehouse / "_types" / "fields.json", "{}")
    """
    if (remote := on_object_store(location)) is not None:
        s3_store.write_text(remote, text)
        return
    write_atomically(local_path(location), text, mode=mode)


def is_folder(location: LocationLike) -> bool:
    """Whether ``location`` is a folder (on object storage: a prefix with objects).

    Example:
        >>> is_folder(settings.warehouse / "events")
        True
    """
    if (remote := on_object_store(location)) is not None:
        return s3_store.is_folder(remote)
    return local_path(location).is_dir()


def exists(location: LocationLike) -> bool:
    """Whether a file or folder is at ``location``.

    Example:
        >>> exists(settings.warehouse / "events" / "_delta_log")
        True
    """
    if (remote := on_object_store(location)) is not None:
        return s3_store.exists(remote)
    return local_path(location).exists()


def names(folder: LocationLike) -> list[str]:
    """The names in ``folder``, sorted; none when there is no such folder.

    Example:
        >>> names(settings.warehouse / "state")
        ['customers', 'orders']
    """
    if (remote := on_object_store(folder)) is not None:
        return s3_store.names(remote)
    try:
        with os.scandir(local_path(folder)) as entries:
            return sorted(entry.name for entry in entries)
    except (FileNotFoundError, NotADirectoryError):
        return []


def any_name(folder: LocationLike, wanted: Callable[[str], bool]) -> bool:
    """Whether a name in ``folder`` is ``wanted``, stopping at the first (a Delta log or
    Spark's offset log may hold thousands).

    Example:
        >>> any_name(settings.warehouse / "events" / "_delta_log", str.isdigit)
        False
    """
    if (remote := on_object_store(folder)) is not None:
        return s3_store.any_name(remote, wanted)
    try:
        with os.scandir(local_path(folder)) as entries:
            return any(wanted(entry.name) for entry in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def make_folder(location: LocationLike) -> None:
    """Create the folder and its parents (nothing to do when it exists).

    Example:
        >>> make_folder(settings.checkpoints / "ingest-topics_orders")
    """
    if on_object_store(location) is not None:
        return  # an object store has no folders: a prefix exists with its objects
    local_path(location).mkdir(parents=True, exist_ok=True)


def remove_tree(location: LocationLike) -> None:
    """Delete the folder and everything in it (nothing to do when it is gone).

    Example:
        >>> remove_tree(settings.checkpoints / "ingest-topics_orders" / "spark")
    """
    if (remote := on_object_store(location)) is not None:
        s3_store.remove_tree(remote)
        return
    shutil.rmtree(local_path(location), ignore_errors=False)


def modified_at(location: LocationLike) -> datetime | None:
    """When the file at ``location`` was last written (UTC), or None when there is none.

    Example:
        >>> modified_at("/wh/_checkpoints/ingest-topics_a/spark/commits/0")
        datetime.datetime(2026, 12, 2, 1, 20, tzinfo=datetime.timezone.utc)
    """
    if (remote := on_object_store(location)) is not None:
        return s3_store.modified_at(remote)
    try:
        return datetime.fromtimestamp(local_path(location).stat().st_mtime, UTC)
    except FileNotFoundError:
        return None


def storage_options(location: LocationLike) -> dict[str, str]:
    """What delta-rs needs to open a table at ``location`` (credentials, endpoint, its
    conditional put): none for a local folder.

    Example:
        >>> storage_options("/wh/events")
        {}
    """
    if on_object_store(location) is not None:
        return s3_store.storage_options()
    return {}


def open_delta_table(location: LocationLike, version: int | None = None) -> Any:
    """The Delta table at ``location`` through delta-rs, at its latest version or
    ``version``; raises delta-rs' ``TableNotFoundError`` when there is none.

    Example:
        >>> open_delta_table(settings.table_path("events")).version()
        12
    """
    from deltalake import DeltaTable

    uri = str(location if on_object_store(location) else local_path(location))
    return DeltaTable(uri, version=version, storage_options=storage_options(location) or None)


def append_to_delta_table(location: LocationLike, rows: Any) -> None:
    """Append ``rows`` (a pyarrow table) to the Delta table at ``location`` through
    delta-rs, creating it when missing (on S3 its commit is put-if-absent, as Spark's).

    Example:
        >>> append_to_delta_table(settings.table_path("dq_results"), arrow_rows)
    """
    from deltalake import write_deltalake

    uri = str(location if on_object_store(location) else local_path(location))
    write_deltalake(uri, rows, mode="append", storage_options=storage_options(location) or None)


def create_delta_table(
    location: LocationLike, schema_json: str, configuration: Mapping[str, str]
) -> None:
    """Create an empty Delta table at ``location`` through delta-rs, with ``schema_json``
    (Delta's schema string, which is Spark's ``StructType.json()``) and the table
    properties ``configuration``; nothing when a table is there already. Version 0 is
    put-if-absent and never retried as a later version, so of two writers creating the
    same table at once exactly one commits it; the other raises delta-rs'
    ``CommitFailedError`` and finds the table on its next look.

    Milliseconds, where Spark's first Delta command in a process takes ~2.5 s.

    Example:
        >>> create_delta_table(settings.table_path("rejects"), REJECTS_SCHEMA.json(), {})
    """
    from deltalake import CommitProperties, DeltaTable, Schema

    uri = str(location if on_object_store(location) else local_path(location))
    DeltaTable.create(
        uri,
        schema=Schema.from_json(schema_json),
        mode="ignore",
        configuration=dict(configuration),
        # Properties delta-rs does not know (Parquet's per-column settings, which Delta
        # hands to its Parquet writer) are kept as given.
        raise_if_key_not_exists=False,
        storage_options=storage_options(location) or None,
        # delta-rs would otherwise retry a lost version 0 as version 1: a second
        # CREATE TABLE, with a table id of its own, over the winner's.
        commit_properties=CommitProperties(max_commit_retries=0),
    )


@contextmanager
def working_copy(folder: LocationLike) -> Iterator[Path]:
    """A local folder holding ``folder``'s files while the block runs, for a library that
    writes only to local files (Great Expectations' stores and Data Docs): the folder
    itself when it is local; otherwise a temporary copy, whose new and changed files are
    written back when the block ends without an error.

    Example:
        >>> with working_copy(settings.warehouse / "dq_docs") as docs:
        ...     build_docs(docs)
    """
    if (remote := on_object_store(folder)) is None:
        path = local_path(folder)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="eventlake-copy-") as scratch:
        copy = Path(scratch)
        fetched = s3_store.download_tree(remote, copy)
        yield copy
        s3_store.upload_tree(copy, remote, fetched)
