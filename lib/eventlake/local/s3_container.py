"""docker-compose's object store: the local S3 server (s3proxy, as the tests and the
local cluster run it) in the foreground of a container, its keys from the environment.

``python -m eventlake.local.s3_container`` takes ``EVENTLAKE_S3_ACCESS_KEY_ID`` and
``EVENTLAKE_S3_SECRET_ACCESS_KEY`` (required: no default keys) and keeps them, with its
objects, in ``EVENTLAKE_S3_SERVER_DIR``; it makes the warehouse's bucket
(``EVENTLAKE_WAREHOUSE``, ``s3a://bucket/prefix``) and then becomes the server, on
``EVENTLAKE_S3_SERVER_HOST`` (docker-compose.yml asks for ``0.0.0.0``, the container's
network, and publishes no port of it on the host). The keys reach the server through
its 0600 properties file, never a command line.

Example:
    >>> main()  # in the object-store container; replaced by the server's JVM
"""

from __future__ import annotations

import os
import sys

from eventlake.core.errors import EventlakeError
from eventlake.local.s3_server import LocalS3Server
from eventlake.local.settings import load_local_settings
from eventlake.storage.s3_store import bucket_and_key
from eventlake.storage.store import on_object_store


def main() -> int:
    """Run the server in the foreground (this process becomes its JVM); 2 with a sentence
    when a setting it needs is missing."""
    try:
        settings = load_local_settings()
        warehouse = on_object_store(settings.warehouse)
    except EventlakeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    keys = settings.s3_access_key_id, settings.s3_secret_access_key
    if keys[0] is None or keys[1] is None:
        print(
            "error: set EVENTLAKE_S3_ACCESS_KEY_ID and EVENTLAKE_S3_SECRET_ACCESS_KEY "
            "(.env.example says how): the object store has no default keys.",
            file=sys.stderr,
        )
        return 2
    if warehouse is None:
        print(
            f"error: EVENTLAKE_WAREHOUSE is {settings.warehouse}, not s3a://bucket/prefix "
            "on this object store.",
            file=sys.stderr,
        )
        return 2
    server = LocalS3Server(settings)
    server.use_credentials(keys[0].get_secret_value(), keys[1].get_secret_value())
    # A bucket of the filesystem backend is a folder of its data dir.
    (server.data_dir / bucket_and_key(warehouse)[0]).mkdir(parents=True, exist_ok=True)
    command = server.prepared_command()
    print(f"object store on {server.endpoint}, objects in {server.data_dir}", flush=True)
    os.execv(command[0], command)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    raise SystemExit(main())
