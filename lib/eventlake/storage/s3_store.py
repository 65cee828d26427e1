"""The warehouse's files on S3 (``s3a://bucket/prefix``, or an S3-compatible server):
the object-store side of :mod:`eventlake.storage.store`, through boto3.

An object store has no folders: a "folder" is a prefix that objects share, creating
one does nothing, and removing one deletes every object under it. A write is one PUT,
so a reader sees the old object or the new one, never half of it. The connection comes
from the ``EVENTLAKE_S3_*`` settings in the environment
(:class:`~eventlake.core.object_store.ObjectStoreSettings`), read once per process and
value.

Example:
    >>> write_text(Location.of("s3a://lake/wh/_types/fields.json"), "{}")
    >>> read_text(Location.of("s3a://lake/wh/_types/fields.json"))
    '{}'
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, ParamSpec, TypeVar

from pydantic_settings import BaseSettings, SettingsConfigDict

from eventlake.core.errors import Refused
from eventlake.core.locations import Location
from eventlake.core.object_store import ObjectStoreSettings
from eventlake.core.settings import ENV_PREFIX

#: Schemes this store serves (Hadoop's S3A name, and the plain one delta-rs also takes).
S3_SCHEMES: Final = frozenset({"s3a", "s3"})
#: Keys one DeleteObjects request takes at most (S3's limit).
_DELETE_BATCH: Final = 1000
#: Attempts of one request on a transient error (botocore's standard retry mode).
_ATTEMPTS: Final = 5


class ObjectStoreError(Refused, RuntimeError):
    """The object store refused or could not be reached; the message says what to set."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _explained(call: Callable[_P, _R]) -> Callable[_P, _R]:
    """``call`` with the store's failures as one sentence (no credentials, no endpoint,
    keys refused, no bucket) instead of botocore's traceback."""

    @functools.wraps(call)
    def explained(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            return call(*args, **kwargs)
        except NoCredentialsError:
            raise ObjectStoreError(
                "No S3 credentials: set EVENTLAKE_S3_ACCESS_KEY_ID and "
                "EVENTLAKE_S3_SECRET_ACCESS_KEY (or the AWS environment's)."
            ) from None
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in {"NoSuchBucket", "AccessDenied", "InvalidAccessKeyId",
                        "SignatureDoesNotMatch", "Forbidden", "403"}:  # fmt: skip
                raise ObjectStoreError(
                    f"The S3 store refused the request ({code}): check the bucket of "
                    "EVENTLAKE_WAREHOUSE and the EVENTLAKE_S3_* keys."
                ) from None
            raise
        except BotoCoreError as error:
            raise ObjectStoreError(
                f"The S3 store could not be reached ({error}): check EVENTLAKE_S3_ENDPOINT "
                "and that the server runs."
            ) from None

    return explained


class _FromEnvironment(BaseSettings, ObjectStoreSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="ignore", hide_input_in_errors=True
    )


def connection() -> ObjectStoreSettings:
    """The object store's connection as the environment gives it now.

    Example:
        >>> connection().s3_region
        'us-east-1'
    """
    return ObjectStoreSettings.model_validate(_FromEnvironment().model_dump())


def client(settings: ObjectStoreSettings | None = None) -> Any:
    """A boto3 S3 client for ``settings`` (default: :func:`connection`), one per value.

    Example:
        >>> client().list_buckets()["Buckets"][0]["Name"]
        'lake'
    """
    settings = settings or connection()
    options = settings.s3_client_options()
    return _client(tuple(sorted(options.items())), settings.s3_path_style)


@functools.cache
def _client(options: tuple[tuple[str, Any], ...], path_style: bool) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        s3={"addressing_style": "path" if path_style else "auto"},
        retries={"max_attempts": _ATTEMPTS, "mode": "standard"},
    )
    return boto3.session.Session().client("s3", config=config, **dict(options))


def bucket_and_key(location: Location) -> tuple[str, str]:
    """The bucket and the key (no leading slash; empty for the bucket itself).

    Example:
        >>> bucket_and_key(Location.of("s3a://lake/wh/events"))
        ('lake', 'wh/events')
    """
    bucket, _, key = str(location).split("://", 1)[1].partition("/")
    return bucket, key


def _is_missing(error: Exception) -> bool:
    code = getattr(error, "response", {}).get("Error", {}).get("Code")
    return code in {"NoSuchKey", "404", "NotFound"}


@_explained
def read_bytes(location: Location) -> bytes | None:
    """The object's bytes, or None when there is none."""
    bucket, key = bucket_and_key(location)
    s3 = client()
    try:
        return bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except s3.exceptions.ClientError as error:
        if _is_missing(error):
            return None
        raise


def read_text(location: Location) -> str | None:
    """The object's text (UTF-8), or None when there is none."""
    found = read_bytes(location)
    return None if found is None else found.decode("utf-8")


@_explained
def write_text(location: Location, text: str) -> None:
    """Put ``text`` as the object (one PUT: whole or not at all)."""
    bucket, key = bucket_and_key(location)
    client().put_object(Bucket=bucket, Key=key, Body=text.encode("utf-8"))


@_explained
def create_text(location: Location, text: str) -> bool:
    """Put ``text`` as the object only if there is none (``If-None-Match: *``); False
    when one is there. A retried PUT that meets its own first attempt counts as created:
    the object then holds exactly ``text`` (make it unique, e.g. with a token).

    Example:
        >>> create_text(Location.of("s3a://lake/wh/_ledger/orders.turns/7"), '{"t": "a1"}')
        True
    """
    bucket, key = bucket_and_key(location)
    s3 = client()
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=text.encode("utf-8"), IfNoneMatch="*")
        return True
    except s3.exceptions.ClientError as error:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status not in {409, 412}:
            raise
    return read_text(location) == text


@_explained
def delete(location: Location) -> None:
    """Delete the object (nothing to do when there is none)."""
    bucket, key = bucket_and_key(location)
    client().delete_object(Bucket=bucket, Key=key)


def _pages(folder: Location, *, delimiter: str | None) -> Iterator[dict[str, Any]]:
    bucket, key = bucket_and_key(folder)
    prefix = f"{key}/" if key else ""
    arguments: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    if delimiter:
        arguments["Delimiter"] = delimiter
    s3 = client()
    try:
        yield from s3.get_paginator("list_objects_v2").paginate(**arguments)
    except s3.exceptions.NoSuchBucket:
        return


def _names_in(page: dict[str, Any], prefix_length: int) -> Iterator[str]:
    for entry in page.get("CommonPrefixes", ()):
        yield entry["Prefix"][prefix_length:].rstrip("/")
    for entry in page.get("Contents", ()):
        yield entry["Key"][prefix_length:]


@_explained
def names(folder: Location) -> list[str]:
    """The names one level below ``folder`` (objects and prefixes), sorted."""
    _, key = bucket_and_key(folder)
    length = len(key) + 1 if key else 0
    found = {name for page in _pages(folder, delimiter="/") for name in _names_in(page, length)}
    return sorted(name for name in found if name)


@_explained
def any_name(folder: Location, wanted: Callable[[str], bool]) -> bool:
    """Whether a name one level below ``folder`` is ``wanted``, stopping at the first page
    that has one."""
    _, key = bucket_and_key(folder)
    length = len(key) + 1 if key else 0
    return any(
        wanted(name) for page in _pages(folder, delimiter="/") for name in _names_in(page, length)
    )


@_explained
def is_folder(location: Location) -> bool:
    """Whether objects share ``location`` as their prefix."""
    bucket, key = bucket_and_key(location)
    listed = client().list_objects_v2(Bucket=bucket, Prefix=f"{key}/" if key else "", MaxKeys=1)
    return bool(listed.get("KeyCount"))


@_explained
def modified_at(location: Location) -> datetime | None:
    """When the object was last written (UTC), or None when there is none."""
    bucket, key = bucket_and_key(location)
    s3 = client()
    try:
        written: datetime = s3.head_object(Bucket=bucket, Key=key)["LastModified"]
    except s3.exceptions.ClientError as error:
        if _is_missing(error):
            return None
        raise
    return written.astimezone(UTC)


def exists(location: Location) -> bool:
    """Whether an object or a folder (a prefix with objects) is at ``location``."""
    return modified_at(location) is not None or is_folder(location)


@_explained
def remove_tree(folder: Location) -> None:
    """Delete every object under ``folder``, and an object of that name."""
    bucket, key = bucket_and_key(folder)
    keys = [
        entry["Key"]
        for page in _pages(folder, delimiter=None)
        for entry in page.get("Contents", ())
    ]
    s3 = client()
    for start in range(0, len(keys), _DELETE_BATCH):
        batch = [{"Key": each} for each in keys[start : start + _DELETE_BATCH]]
        s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
    if key:
        delete(folder)


@_explained
def download_tree(folder: Location, into: Path) -> dict[str, str]:
    """Copy every object under ``folder`` into the local folder ``into`` (same relative
    names); returns each name's ETag, to tell later which files changed."""
    bucket, key = bucket_and_key(folder)
    length = len(key) + 1 if key else 0
    s3 = client()
    tags: dict[str, str] = {}
    for page in _pages(folder, delimiter=None):
        for entry in page.get("Contents", ()):
            name = entry["Key"][length:]
            if not name or name.endswith("/"):
                continue
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, entry["Key"], str(target))
            tags[name] = _local_etag(target)
    return tags


@_explained
def upload_tree(source: Path, folder: Location, unchanged: dict[str, str]) -> int:
    """Copy every file under the local folder ``source`` to ``folder``, except those whose
    content is as ``unchanged`` (name -> :func:`download_tree`'s tag) says; how many."""
    bucket, key = bucket_and_key(folder)
    s3 = client()
    sent = 0
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        name = path.relative_to(source).as_posix()
        if unchanged.get(name) == _local_etag(path):
            continue
        s3.upload_file(str(path), bucket, f"{key}/{name}" if key else name)
        sent += 1
    return sent


def _local_etag(path: Path) -> str:
    """A file's content digest (not the store's ETag, which multipart uploads change)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def storage_options() -> dict[str, str]:
    """delta-rs' storage options for the connection of :func:`connection`."""
    return connection().delta_rs_options()
