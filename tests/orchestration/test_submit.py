"""eventlake.orchestration.submit: spark-submit's kwargs, conf, jars, env, command line."""

from __future__ import annotations

from eventlake.core.settings import Settings
from eventlake.orchestration.submit import (
    SUBMIT_KEYS,
    dry_run_report,
    job_env,
    spark_submit_args,
    submit_conf,
    submit_kwargs,
)
from eventlake.spark.conf import spark_jars


def test_submit_conf_leaves_jars_to_the_jars_argument(settings: Settings) -> None:
    kwargs = submit_kwargs(settings, ["--topic", "a"])
    assert "spark.jars" not in submit_conf(settings)
    assert kwargs["jars"].split(",") == [str(jar) for jar in spark_jars(settings)]


def test_submit_keys_name_what_submit_kwargs_gives(settings: Settings) -> None:
    assert tuple(submit_kwargs(settings, [])) == SUBMIT_KEYS


def test_job_env_carries_bootstrap_servers_and_warehouse(settings: Settings) -> None:
    assert job_env(settings) == {
        "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
    }


def test_spark_submit_args_put_conf_and_jars_before_the_application() -> None:
    submit = {"application_args": ["--topic", "a"], "conf": {"k": "v"}, "jars": "x.jar"}
    assert spark_submit_args("job.py", submit, master="local[2]") == [
        "spark-submit", "--master", "local[2]", "--conf", "k=v", "--jars", "x.jar",
        "job.py", "--topic", "a",
    ]  # fmt: skip


def test_dry_run_report_quotes_for_the_shell_and_shows_the_environment() -> None:
    plan = [{"application_args": ["--topic", "a b"], "env_vars": {"W": "/x y"}}]
    assert dry_run_report("job.py", plan) == ["W='/x y' spark-submit job.py --topic 'a b'"]
