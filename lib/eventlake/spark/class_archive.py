"""The class archive of eventlake's Spark driver: the JVM's class-data sharing (CDS).

A Spark driver with Delta and the Kafka connector loads ~20,000 classes from ~300 jars at
every start: reading, parsing, verifying and linking them is seconds of a job's start-up.
A dynamic CDS archive (``-XX:ArchiveClassesAtExit``, JDK 13 and later) holds those
classes ready to map; :func:`archive_java_option` gives the driver the option that maps
it. ``make setup`` builds the archive (``eventlake class-archive``,
:mod:`eventlake.local.class_archive`) beside a fingerprint of what it was made from: the
Java binary, pyspark and the jars. A driver maps the archive only while that fingerprint
holds, so a JDK upgrade or new jars never meet a stale archive (the JVM would refuse it
with a warning); rebuilding is ``eventlake class-archive`` again.

Example:
    >>> archive_java_option(settings.class_archive, spark_jars(settings))
    '-XX:SharedArchiveFile=/work/main/var/jvm/spark-driver.jsa'"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Final

#: Beside the archive: what it was built from (:func:`fingerprint`).
FINGERPRINT_SUFFIX: Final = ".json"


#: Set in the process that builds the archive: where the JVM writes it at exit.
DUMP_TO_ENV: Final = "EVENTLAKE_CLASS_ARCHIVE_DUMP_TO"


def java_binary() -> Path | None:
    """The ``java`` that PySpark starts (``$JAVA_HOME/bin/java``, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def fingerprint(jars: list[Path]) -> dict[str, Any]:
    """What an archive is valid for: the Java binary, pyspark and the jars Spark gets
    (:func:`eventlake.spark.conf.spark_jars`).

    Example:
        >>> fingerprint(spark_jars(load_settings()))["pyspark"]
        '4.1.3'
    """
    import pyspark

    def stamp(path: Path) -> list[Any]:
        stat = path.stat()
        return [str(path), stat.st_size, int(stat.st_mtime)]

    java = java_binary()
    return {
        "java": stamp(java) if java is not None else None,
        "pyspark": pyspark.__version__,
        "pyspark_jars": sorted(
            p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
        ),
        "jars": [stamp(jar) for jar in jars],
    }


def archive_java_option(archive: Path | None, jars: list[Path]) -> str | None:
    """The driver's JVM option that maps ``archive``, or None when it is unset, missing,
    or not built from this Java, pyspark and ``jars``.

    Example:
        >>> archive_java_option(None, spark_jars(load_settings())) is None
        True
    """
    if archive is None or os.environ.get(DUMP_TO_ENV) or not archive.is_file():
        return None
    stamp = archive.with_name(archive.name + FINGERPRINT_SUFFIX)
    try:
        built_from = json.loads(stamp.read_text())["fingerprint"]
        current = fingerprint(jars)
    except (OSError, ValueError, KeyError):
        return None
    return f"-XX:SharedArchiveFile={archive}" if built_from == current else None


def dump_java_option() -> str | None:
    """In the process that builds the archive: the option that writes it at JVM exit."""
    target = os.environ.get(DUMP_TO_ENV)
    return f"-XX:ArchiveClassesAtExit={target}" if target else None
