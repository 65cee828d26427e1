"""eventlake.local.s3_container, docker-compose's object store: the local S3 server in
the foreground with the keys it is given, the warehouse's bucket made; refused in a
sentence without keys. Run here on 127.0.0.1 (the compose file asks for 0.0.0.0)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import httpx
from botocore.config import Config

from eventlake.local.processes import free_port

ACCESS_KEY = "eventlake-compose"
SECRET_KEY = "compose-" + "0123456789abcdef"


def _environment(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTLAKE_S3_")}
    return {
        **env,
        "EVENTLAKE_WAREHOUSE": "s3a://compose-lake/warehouse",
        "EVENTLAKE_S3_SERVER_DIR": str(tmp_path / "object-store"),
        "EVENTLAKE_S3_SERVER_PORT": str(port),
        "EVENTLAKE_S3_SERVER_HOST": "127.0.0.1",
        **extra,
    }


def test_without_keys_it_refuses_in_a_sentence(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "eventlake.local.s3_container"],
        env=_environment(tmp_path, free_port()),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    assert "set EVENTLAKE_S3_ACCESS_KEY_ID and EVENTLAKE_S3_SECRET_ACCESS_KEY" in result.stderr
    assert "Traceback" not in result.stderr


def test_it_serves_the_warehouses_bucket_with_the_keys_it_is_given(tmp_path: Path) -> None:
    port = free_port()
    env = _environment(
        tmp_path,
        port,
        EVENTLAKE_S3_ACCESS_KEY_ID=ACCESS_KEY,
        EVENTLAKE_S3_SECRET_ACCESS_KEY=SECRET_KEY,
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "eventlake.local.s3_container"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(endpoint, timeout=1)
                break
            except httpx.HTTPError:
                assert server.poll() is None, server.communicate()[0]
                assert time.monotonic() < deadline, "the object store never answered"
                time.sleep(0.2)
        client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            config=Config(s3={"addressing_style": "path"}),
        )
        client.put_object(Bucket="compose-lake", Key="warehouse/probe", Body=b"x")
        assert (
            client.get_object(Bucket="compose-lake", Key="warehouse/probe")["Body"].read() == b"x"
        )
        # The keys are in no command line: the JVM reads them from its 0600 properties.
        command = Path(f"/proc/{server.pid}/cmdline").read_bytes().decode()
        assert "org.gaul.s3proxy.Main" in command and SECRET_KEY not in command
    finally:
        server.kill()
        server.wait()
