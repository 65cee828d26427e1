"""eventlake.spark.auth: who authenticates, what the drivers and daemons are given, and
that the secret never lands where others can read it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr
from pyspark.sql import SparkSession

from eventlake.core.settings import InvalidSettingError, load_settings
from eventlake.orchestration.submit import spark_submit_args, submit_kwargs
from eventlake.spark.auth import (
    AUTH_CONF,
    SECRET_KEY,
    SparkAuthError,
    auth_conf,
    daemon_conf,
    driver_secret_conf,
    properties_value,
    write_daemon_conf,
)
from eventlake.spark.conf import spark_conf

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "spark://10.0.0.5:7077"
#: Every character a properties file treats specially, and some it does not.
AWKWARD_SECRET = 's3cr=t:#! "quoted" back\\slash;tab\there é\\u0041 end'


def test_a_standalone_master_authenticates_and_encrypts_by_default() -> None:
    settings = load_settings(spark_master=CLUSTER)

    conf = spark_conf(settings)

    assert conf["spark.authenticate"] == "true"
    assert conf["spark.network.crypto.enabled"] == "true"


def test_a_local_master_has_no_rpc_to_authenticate() -> None:
    settings = load_settings(spark_master="local[2]", spark_auth_secret="s")

    assert auth_conf(settings) == {}
    assert driver_secret_conf(settings) == {}
    assert "spark.authenticate" not in spark_conf(settings)


def test_authentication_is_off_only_when_the_settings_say_so() -> None:
    settings = load_settings(spark_master=CLUSTER, spark_authenticate=False)

    assert auth_conf(settings) == {}
    assert driver_secret_conf(settings) == {}


def test_a_cluster_job_without_the_secret_is_refused_with_what_to_set() -> None:
    settings = load_settings(spark_master=CLUSTER)

    with pytest.raises(SparkAuthError, match=r"set EVENTLAKE_SPARK_AUTH_SECRET.*spark_default"):
        driver_secret_conf(settings)


def test_the_driver_gets_the_secret_only_through_the_session_builder() -> None:
    secret = "d41d8cd98f00b204e9800998ecf8427e"
    settings = load_settings(spark_master=CLUSTER, spark_auth_secret=secret)

    submit = submit_kwargs(settings, ["--topic", "a"])
    command_line = " ".join(spark_submit_args("job.py", submit, master=CLUSTER))

    assert driver_secret_conf(settings) == {SECRET_KEY: secret}
    assert secret not in command_line
    assert secret not in repr(submit)
    assert "spark.authenticate=true" in command_line


def test_a_secret_with_edge_spaces_is_refused_without_echoing_it() -> None:
    with pytest.raises(InvalidSettingError) as refused:
        load_settings(spark_auth_secret=" hunter2 ")

    assert "white space" in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_properties_values_read_back_unchanged_by_java(spark: SparkSession) -> None:
    """Read by java.util.Properties, as Spark reads spark-defaults.conf."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    properties = jvm.java.util.Properties()

    properties.load(jvm.java.io.StringReader(f"key {properties_value(AWKWARD_SECRET)}\n"))

    assert properties.getProperty("key") == AWKWARD_SECRET


def test_the_daemons_conf_turns_authentication_and_encryption_on() -> None:
    lines = daemon_conf(SecretStr("abc")).splitlines()

    assert lines == [*(f"{key} {value}" for key, value in AUTH_CONF.items()), f"{SECRET_KEY} abc"]


def test_the_daemons_conf_is_private_to_its_owner(tmp_path: Path) -> None:
    path = write_daemon_conf(tmp_path / "conf", SecretStr("abc"))

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def _spark_daemon_script(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """infra/spark-daemon.sh (docker-compose's daemon start) asking the real Master
    class for its usage: it writes the conf, then hands over to spark-class."""
    return subprocess.run(
        [str(ROOT / "infra" / "spark-daemon.sh"), "org.apache.spark.deploy.master.Master", "-h"],
        env={
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(tmp_path),
            "JAVA_HOME": os.environ.get("JAVA_HOME", ""),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_container_daemon_script_writes_the_secret_to_a_private_conf(tmp_path: Path) -> None:
    result = _spark_daemon_script(tmp_path, {"EVENTLAKE_SPARK_AUTH_SECRET": "abc"})

    conf = tmp_path / "spark-conf" / "spark-defaults.conf"
    assert "Usage: Master" in result.stderr, result.stderr
    assert conf.read_text() == daemon_conf(SecretStr("abc"))
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600


def test_the_container_daemon_script_refuses_to_start_without_the_secret(tmp_path: Path) -> None:
    result = _spark_daemon_script(tmp_path, {})

    assert result.returncode != 0
    assert "set EVENTLAKE_SPARK_AUTH_SECRET, see .env.example" in result.stderr
    assert "Usage: Master" not in result.stderr
