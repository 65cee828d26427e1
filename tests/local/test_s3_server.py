"""The local S3 server (eventlake.local.s3_server): where it listens, where its secret
is, and the probe of its conditional PUT."""

from __future__ import annotations

import ipaddress
import stat
from typing import Any

import psutil
import pytest

from eventlake.local.s3_server import LocalS3Server, S3ServerError, probe_conditional_put
from eventlake.storage import s3_store


def test_the_server_listens_on_loopback_only(s3_server: LocalS3Server) -> None:
    pid = s3_server.pid()
    assert pid is not None
    listening = [c for c in psutil.Process(pid).net_connections() if c.status == "LISTEN"]
    assert listening
    # Java binds 127.0.0.1 as an IPv6 socket: ::ffff:127.0.0.1, the same address.
    addresses = {ipaddress.ip_address(c.laddr.ip) for c in listening}
    plain = {getattr(a, "ipv4_mapped", None) or a for a in addresses}
    assert plain == {ipaddress.ip_address("127.0.0.1")}


def test_the_secret_is_in_owner_only_files_not_on_the_command_line(
    s3_server: LocalS3Server,
) -> None:
    pid = s3_server.pid()
    assert pid is not None
    secret = s3_server.environment()["EVENTLAKE_S3_SECRET_ACCESS_KEY"]
    assert secret not in " ".join(psutil.Process(pid).cmdline())
    for holder in (s3_server.credentials_file, s3_server.config_file):
        assert secret in holder.read_text()
        assert stat.S_IMODE(holder.stat().st_mode) == 0o600


def test_the_status_never_shows_the_secret(s3_server: LocalS3Server) -> None:
    secret = s3_server.environment()["EVENTLAKE_S3_SECRET_ACCESS_KEY"]
    described = s3_server.status().describe()
    assert described.startswith("S3 server running")
    assert secret not in described
    assert secret not in repr(s3_server.connection())


def test_a_request_with_other_credentials_is_refused(s3_server: LocalS3Server) -> None:
    from pydantic import SecretStr

    wrong = s3_server.connection().model_copy(
        update={"s3_secret_access_key": SecretStr("not-the-secret")}
    )
    client = s3_store.client(wrong)
    with pytest.raises(client.exceptions.ClientError, match=r"SignatureDoesNotMatch|Forbidden"):
        client.list_buckets()


class _EveryPutSucceeds:
    """A store that answers every PUT with success: what a server without an atomic
    If-None-Match looks like to two racing writers."""

    def put_object(self, **_: Any) -> dict[str, Any]:
        return {}

    def delete_object(self, **_: Any) -> dict[str, Any]:
        return {}


def test_the_probe_refuses_a_server_whose_conditional_put_is_not_atomic() -> None:
    with pytest.raises(S3ServerError, match="cannot test concurrent commits"):
        probe_conditional_put(_EveryPutSucceeds(), "bucket", rounds=1)


def test_the_probe_passes_on_the_server(s3_server: LocalS3Server) -> None:
    from tests.conftest import TEST_BUCKET

    probe_conditional_put(s3_store.client(), TEST_BUCKET, rounds=5)
