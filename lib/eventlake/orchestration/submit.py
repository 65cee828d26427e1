"""One ``spark-submit``: the keyword arguments of SparkSubmitOperator, and its command line.

Application args, Spark conf, jars and environment, all derived from
:mod:`eventlake.core.settings`; the master comes from the Airflow connection
``spark_default``, never from here.

Example:
    >>> sorted(submit_kwargs(load_settings(), ["--topic", "a"]))
    ['application_args', 'conf', 'env_vars', 'jars']
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from eventlake.core.driver_work import DriverWork
from eventlake.core.settings import Settings
from eventlake.spark.conf import spark_conf, spark_jars

#: Airflow connection that gives spark-submit its master (``local[*]``, ``spark://...``).
SPARK_CONN_ID: Final = "spark_default"
#: The keys of :func:`submit_kwargs`: what a plan gives each spark-submit.
SUBMIT_KEYS: Final = ("application_args", "conf", "jars", "env_vars")


def submit_conf(settings: Settings, *, work: DriverWork = DriverWork.GENERAL) -> dict[str, str]:
    """Spark conf for SparkSubmitOperator: :func:`eventlake.spark.conf.spark_conf` (``work``:
    what the job's driver does) without ``spark.jars`` (that goes to the operator's
    ``jars``, i.e. ``--jars``).

    Example:
        >>> submit_conf(load_settings())["spark.sql.extensions"]
        'io.delta.sql.DeltaSparkSessionExtension'
    """
    conf = spark_conf(settings, work=work)
    conf.pop("spark.jars", None)
    return conf


def submit_jars(settings: Settings) -> str:
    """The jars folder's jars, comma-separated, for the operator's ``jars`` argument.

    Raises :class:`eventlake.spark.conf.MissingJarsError` when the folder is incomplete.

    Example:
        >>> Path(submit_jars(load_settings()).split(",")[0]).name
        'commons-pool2-2.12.1.jar'
    """
    return ",".join(str(jar) for jar in spark_jars(settings))


def job_env(settings: Settings) -> dict[str, str]:
    """Environment of the spark-submit process, on top of the worker's own: the job's
    settings that must match the DAG's. Credentials are never passed this way (a plan is
    an XCom): the spark-submit task adds the ``kafka_default`` connection's password to
    the process's environment when it runs (see
    :class:`eventlake.orchestration.dag_parts.KafkaSparkSubmitOperator`).

    Example:
        >>> job_env(load_settings(bootstrap_servers="kafka:9092"))["EVENTLAKE_BOOTSTRAP_SERVERS"]
        'kafka:9092'
    """
    return {
        "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
    }


def submit_kwargs(
    settings: Settings,
    application_args: Sequence[str],
    *,
    work: DriverWork = DriverWork.GENERAL,
) -> dict[str, Any]:
    """Keyword arguments of one SparkSubmitOperator run: ``application_args``, ``conf``
    (:func:`submit_conf`, ``work`` passed on), ``jars`` and ``env_vars``. Raises
    :class:`eventlake.spark.conf.MissingJarsError` when the jars folder is incomplete.

    Example:
        >>> sorted(submit_kwargs(load_settings(), ["--topic", "a"]))
        ['application_args', 'conf', 'env_vars', 'jars']
    """
    return {
        "application_args": list(application_args),
        "conf": submit_conf(settings, work=work),
        "jars": submit_jars(settings),
        "env_vars": job_env(settings),
    }


def spark_submit_args(
    application: str | Path, submit: Mapping[str, Any], *, master: str | None = None
) -> list[str]:
    """The spark-submit command line of one :func:`submit_kwargs` entry, for logs and
    dry runs (the operator builds the same one). ``master`` is left out unless given:
    in a DAG it comes from the ``spark_default`` connection.

    Example:
        >>> submit = {"application_args": ["--topic", "a"], "conf": {"k": "v"}, "jars": "x.jar"}
        >>> " ".join(spark_submit_args("job.py", submit, master="local[2]"))
        'spark-submit --master local[2] --conf k=v --jars x.jar job.py --topic a'
    """
    command = ["spark-submit"]
    if master is not None:
        command += ["--master", master]
    for key, value in submit.get("conf", {}).items():
        command += ["--conf", f"{key}={value}"]
    if submit.get("jars"):
        command += ["--jars", submit["jars"]]
    return [*command, str(application), *submit.get("application_args", [])]


def dry_run_report(application: str | Path, plan: Sequence[Mapping[str, Any]]) -> list[str]:
    """Shell-quoted command lines of a plan, with the environment they would get.

    Example:
        >>> plan = [{"application_args": ["--topic", "a"], "env_vars": {"A": "1"}}]
        >>> dry_run_report("job.py", plan)
        ['A=1 spark-submit job.py --topic a']
    """
    lines = []
    for submit in plan:
        env_vars = submit.get("env_vars", {})
        env = [f"{key}={shlex.quote(str(value))}" for key, value in env_vars.items()]
        lines.append(" ".join([*env, shlex.join(spark_submit_args(application, submit))]))
    return lines
