"""eventlake.cli.common: what the commands share."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from pyspark.sql import SparkSession

from eventlake.cli.common import run_job
from eventlake.core.settings import Settings
from tests.helpers import interrupted_spark_job

SCRIPT = """
import sys
from eventlake.cli.common import import_in_background
import_in_background("no_such_module_here").join(60)
import eventlake.quality
print("gx before", "great_expectations" in sys.modules)
import_in_background("eventlake.quality.run").join(300)
print("gx after", "great_expectations" in sys.modules)
"""


def test_import_in_background_loads_the_module_and_keeps_failures_quiet() -> None:
    # A fresh interpreter: in the test process the module is imported already.
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=300
    )
    # The package alone does not load GX; the background import does.
    assert done.stdout.split("\n")[:2] == ["gx before False", "gx after True"]
    # A module that cannot be imported leaves it to the job's own import to say so.
    assert "no_such_module_here" not in done.stderr


def test_a_job_run_with_after_stop_says_what_a_stop_left_and_exits_0(
    spark: SparkSession, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    # The session is the test session (getOrCreate); the job is a Spark job interrupted
    # by SIGINT a second in.
    with pytest.raises(typer.Exit) as exited:
        run_job(
            settings,
            "eventlake-reconcile",
            lambda session, _settings, _request: interrupted_spark_job(session),
            None,
            after_stop="what it committed stays; run it again to finish the rebuild",
        )
    assert exited.value.exit_code == 0
    out = capsys.readouterr().out
    assert "reconcile: SIGINT received: cancelling its Spark jobs" in out
    assert out.rstrip().endswith(
        "reconcile: stopped by SIGINT; what it committed stays; run it again to finish the rebuild"
    )
