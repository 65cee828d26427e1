"""The commands the README, docs/querying.md and the demo's closing lines show, run as a
new user runs them: from a shell in the checkout without the venv activated (no
``.venv/bin`` on PATH, no ``VIRTUAL_ENV``), each exactly as printed.

The shell runs in a folder laid out as the checkout (``.venv`` and ``infra`` linked to
this one's, ``var/warehouse`` a warehouse of this test's own, named to eventlake by
``EVENTLAKE_WAREHOUSE`` as a user's settings would), so the printed relative paths
resolve as in a checkout and whatever a command leaves in its working folder shows.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import PROJECT_ROOT, Settings
from eventlake.kafka.clients import Record
from eventlake.local.broker import LocalBroker
from eventlake.local.demo import NEXT_STEPS
from tests.helpers import binary_headers, land

PAID = "com.example.order.paid"
#: What no command may leave in the folder it runs in (Spark's Hive metastore defaults).
STRAY: frozenset[str] = frozenset({"metastore_db", "derby.log", "spark-warehouse"})


def _blocks(language: str, document: str) -> list[str]:
    text = (PROJECT_ROOT / document).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def _shell_commands(document: str) -> list[str]:
    """The document's ``bash`` blocks without their ``make`` lines (CI runs those)."""
    scripts = []
    for block in _blocks("bash", document):
        kept = [line for line in block.splitlines() if not line.startswith("make ")]
        if any(line.strip() for line in kept):
            scripts.append("\n".join(kept))
    return scripts


def _venv_commands(script: str) -> list[str]:
    return [line.split("  #")[0].strip() for line in script.splitlines() if line.strip()]


def _paid(n: int, amount: float) -> Record:
    headers = binary_headers(f"p{n}", type_=PAID)
    headers += [
        ("ce_subject", f"order/{n}".encode()),
        ("ce_time", b"2026-01-01T10:00:00Z"),
        ("content-type", b"application/json"),
    ]
    return (f"order/{n}".encode(), json.dumps({"amount": amount}).encode(), headers)


def _new_shell_env(settings: Settings) -> dict[str, str]:
    """A login shell's environment: no venv on PATH; eventlake's settings as a user's."""
    venv_bin = str(PROJECT_ROOT / ".venv" / "bin")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    env = {
        "HOME": os.environ.get("HOME", "/tmp"),
        "PATH": os.pathsep.join(path or ["/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
        "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "EVENTLAKE_SHUFFLE_PARTITIONS": "2",
    }
    if "JAVA_HOME" in os.environ:
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    return env


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder laid out as the checkout: ``.venv`` and ``infra`` are this one's."""
    folder = tmp_path / "checkout"
    (folder / "var").mkdir(parents=True)
    for name in (".venv", "infra"):
        (folder / name).symlink_to(PROJECT_ROOT / name)
    return folder


def _run(script: str, checkout: Path, env: dict[str, str], *, stdin: str | None = None) -> str:
    argv = ["bash", "-euo", "pipefail", "-c", script] if stdin is None else [script]
    result = subprocess.run(
        argv,
        cwd=checkout,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, f"{script!r} exited {result.returncode}:\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def test_the_demos_next_steps_are_the_readmes_commands() -> None:
    (readme,) = _shell_commands("README.md")
    printed = [command for command, _ in NEXT_STEPS]
    assert sorted(printed) == sorted(_venv_commands(readme))


def test_the_documented_commands_run_as_printed_from_a_new_shell(
    broker: LocalBroker, spark: SparkSession, settings: Settings, checkout: Path, topic_name: str
) -> None:
    own = settings.model_copy(
        update={"warehouse": checkout / "var" / "warehouse", "typed_tables": True}
    )
    land(spark, own, topic_name, [_paid(1, 5.5), _paid(2, 7.25), _paid(3, 1.0)])
    env = _new_shell_env(own)

    (readme,) = _shell_commands("README.md")
    shown = _run(readme, checkout, env)
    assert topic_name in shown  # status: where the topic stands
    assert shown.count(PAID) >= 2  # types and the query name the type

    (spark_sql,) = _shell_commands("docs/querying.md")
    assert _run(spark_sql, checkout, env).split() == ["13.75"]

    polars_snippet, pyspark_snippet, delta_rs_snippet = _blocks("python", "docs/querying.md")
    assert float(_run(".venv/bin/python", checkout, env, stdin=polars_snippet)) == 13.75
    assert PAID in _run(".venv/bin/python", checkout, env, stdin=pyspark_snippet)
    assert float(_run(".venv/bin/python", checkout, env, stdin=delta_rs_snippet)) == 13.75

    left = {entry.name for entry in checkout.iterdir()}
    assert not left & STRAY, f"left in the working folder: {sorted(left & STRAY)}"
