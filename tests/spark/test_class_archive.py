"""The Spark driver's class archive (eventlake.spark.class_archive): mapped only while it
matches, and mapped for real by a driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlake.core.settings import Settings
from eventlake.spark.class_archive import FINGERPRINT_SUFFIX, archive_java_option, fingerprint
from eventlake.spark.conf import spark_conf, spark_jars


def _option(settings: Settings) -> str | None:
    return archive_java_option(settings.class_archive, spark_jars(settings))


def _archive_at(settings: Settings, folder: Path, built_from: dict[str, object]) -> Settings:
    archive = folder / "driver.jsa"
    archive.write_bytes(b"not read by these tests")
    stamp = archive.with_name(archive.name + FINGERPRINT_SUFFIX)
    stamp.write_text(json.dumps({"fingerprint": built_from}))
    return settings.model_copy(update={"class_archive": archive})


def test_an_archive_of_this_java_and_these_jars_is_mapped(
    settings: Settings, tmp_path: Path
) -> None:
    current = _archive_at(settings, tmp_path, fingerprint(spark_jars(settings)))

    assert _option(current) == f"-XX:SharedArchiveFile={tmp_path / 'driver.jsa'}"
    options = spark_conf(current)["spark.driver.extraJavaOptions"].split()
    assert f"-XX:SharedArchiveFile={tmp_path / 'driver.jsa'}" in options


def test_an_archive_of_other_jars_is_not_mapped(settings: Settings, tmp_path: Path) -> None:
    elsewhere = [["/elsewhere/delta-spark.jar", 1, 1]]
    other_jars = {**fingerprint(spark_jars(settings)), "jars": elsewhere}
    stale = _archive_at(settings, tmp_path, other_jars)

    assert _option(stale) is None
    options = spark_conf(stale)["spark.driver.extraJavaOptions"]
    assert "SharedArchiveFile" not in options


def test_no_archive_no_option(settings: Settings, tmp_path: Path) -> None:
    # A missing file would make the JVM give up class sharing altogether, even the JDK's.
    missing = settings.model_copy(update={"class_archive": tmp_path / "none.jsa"})
    switched_off = settings.model_copy(update={"class_archive": None})

    assert _option(missing) is None
    assert _option(switched_off) is None


def test_an_empty_environment_value_switches_the_archive_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTLAKE_CLASS_ARCHIVE", "")

    assert Settings().class_archive is None


def test_a_driver_maps_the_archive_that_make_setup_built(
    settings: Settings, tmp_path: Path
) -> None:
    archive = Settings().class_archive
    assert archive is not None
    built = settings.model_copy(update={"class_archive": archive})
    assert _option(built) is not None, (
        f"no current class archive at {archive}: `make setup` builds it"
    )
    loaded = tmp_path / "classes.log"
    driver = (
        "from eventlake.core.settings import load_settings\n"
        "from eventlake.spark.session import build_spark_session\n"
        "build_spark_session(load_settings(), app_name='archive-test').range(3).count()\n"
    )
    env = {
        **os.environ,
        "EVENTLAKE_CLASS_ARCHIVE": str(archive),
        "EVENTLAKE_JARS_DIR": str(settings.jars_dir),
        "EVENTLAKE_WAREHOUSE": str(tmp_path / "warehouse"),
        "EVENTLAKE_DRIVER_JAVA_OPTIONS": f"-XX:TieredStopAtLevel=1 "
        f"-Xlog:class+load=info:file={loaded}",
    }
    run = subprocess.run(
        [sys.executable, "-c", driver], env=env, capture_output=True, text=True, timeout=300
    )

    assert run.returncode == 0, run.stderr[-2000:]
    # One class of pyspark's own jars, one of the jars eventlake adds (Delta's).
    sources = {
        fields[1]: line.split(" source: ", 1)[1]
        for line in loaded.read_text().splitlines()
        if " source: " in line and len(fields := line.split()) > 2
    }
    for name in (
        "org.apache.spark.sql.SparkSession",
        "io.delta.sql.DeltaSparkSessionExtension",
    ):
        assert sources.get(name) == "shared objects file (top)", (name, sources.get(name))
