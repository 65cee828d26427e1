"""Spark's S3A file system for a warehouse on ``s3a://``: endpoint, region, addressing
and credentials from the settings (:class:`~eventlake.core.object_store.ObjectStoreSettings`).

Two parts, as the Spark secret has them (:mod:`eventlake.spark.auth`): :func:`s3a_conf`
holds nothing secret and may go on a spark-submit command line; :func:`s3a_secret_conf`
holds the keys and is set through py4j when the session is built, never on a command
line (Spark's UI redacts them: ``spark.redaction.regex``). Without keys in the settings,
S3A's own chain applies (the AWS environment variables, a profile, an instance role).

Example:
    >>> s3a_conf(load_settings(warehouse="s3a://lake/wh", s3_endpoint="http://127.0.0.1:9000"))[
    ...     "spark.hadoop.fs.s3a.endpoint"]
    'http://127.0.0.1:9000'
"""

from __future__ import annotations

from typing import Final

from eventlake.core.settings import Settings
from eventlake.storage.s3_store import S3_SCHEMES
from eventlake.storage.store import on_object_store

_PREFIX: Final = "spark.hadoop.fs.s3a."
#: Delta's LogStore for S3 (lib/jvm: io.eventlake.storage), put-if-absent commits.
LOG_STORE: Final = "io.eventlake.storage.ConditionalS3LogStore"


def s3a_conf(settings: Settings) -> dict[str, str]:
    """S3A's settings for a warehouse on S3 (none for a local one), without secrets.

    Example:
        >>> s3a_conf(load_settings(warehouse="/srv/wh"))
        {}
    """
    if on_object_store(settings.warehouse) is None:
        return {}
    conf = {
        f"{_PREFIX}endpoint.region": settings.s3_region,
        f"{_PREFIX}path.style.access": "true" if settings.s3_path_style else "false",
        # Put-if-absent on S3 (If-None-Match: *) for the files created without overwrite,
        # which Delta's commits are through eventlake's LogStore (lib/jvm): two drivers
        # committing one version cannot both succeed. Delta's own S3 LogStore is safe for
        # one driver only.
        f"{_PREFIX}create.conditional.enabled": "true",
        **{f"spark.delta.logStore.{scheme}.impl": LOG_STORE for scheme in S3_SCHEMES},
    }
    if settings.s3_endpoint:
        conf[f"{_PREFIX}endpoint"] = settings.s3_endpoint
        conf[f"{_PREFIX}connection.ssl.enabled"] = (
            "false" if settings.s3_endpoint.startswith("http://") else "true"
        )
    return conf


def s3a_secret_conf(settings: Settings) -> dict[str, str]:
    """The S3 keys as S3A takes them, for the session builder only; none when the
    warehouse is local or the settings hold no keys.

    Example:
        >>> s3a_secret_conf(load_settings(warehouse="/srv/wh"))
        {}
    """
    keys = settings.s3_access_key_id, settings.s3_secret_access_key
    if on_object_store(settings.warehouse) is None or None in keys:
        return {}
    access, secret = (key.get_secret_value() for key in keys if key is not None)
    return {f"{_PREFIX}access.key": access, f"{_PREFIX}secret.key": secret}
