"""Spark RPC authentication and encryption on a standalone cluster: one shared secret.

On a ``spark://`` master, Spark's RPC between the driver, the master, the workers and
the executors carries the Kafka options (the SASL password among them) and the right
to start applications. With ``spark.authenticate`` every connection proves it knows the
cluster's secret, and ``spark.network.crypto.enabled`` encrypts what follows (AES,
keys derived from that secret). In standalone mode the secret must be set on every
daemon and on every driver: a worker hands it to its executors in their environment.

How the secret travels, never on a command line (other users see those in ``ps``):

* drivers: :func:`driver_secret_conf`, set through py4j when the session is built,
  from ``EVENTLAKE_SPARK_AUTH_SECRET`` (an Airflow task puts the ``spark_default``
  connection's password there, in the spark-submit process's environment);
* master and workers: a ``spark-defaults.conf`` of their own ``SPARK_CONF_DIR``, made
  by :func:`write_daemon_conf` with permissions 0600 before a byte is in it. The local
  cluster writes it from Python; a container runs ``python -m eventlake.spark.auth``
  (see ``infra/spark-daemon.sh``).

Example:
    >>> auth_conf(load_settings(spark_master="spark://m:7077"))
    {'spark.authenticate': 'true', 'spark.network.crypto.enabled': 'true'}
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

from pydantic import SecretStr

from eventlake.core.errors import Refused
from eventlake.core.settings import Settings, load_settings
from eventlake.storage.files import write_atomically

#: What turns authentication and encryption on; equal in drivers and daemons.
AUTH_CONF: Final = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
}
SECRET_KEY: Final = "spark.authenticate.secret"
SECRET_ENV: Final = "EVENTLAKE_SPARK_AUTH_SECRET"
DAEMON_CONF_FILE: Final = "spark-defaults.conf"


class SparkAuthError(Refused, RuntimeError):
    """A cluster job without the cluster's secret; the message says where to set it."""


def authenticates(settings: Settings) -> bool:
    """True when jobs of ``settings`` authenticate to their master: a standalone
    (``spark://``) master, unless ``spark_authenticate`` is off. Local masters run
    everything in the driver's JVM, with no RPC between processes.

    Example:
        >>> authenticates(load_settings(spark_master="local[2]"))
        False
    """
    return settings.spark_authenticate and settings.spark_master.startswith("spark://")


def auth_conf(settings: Settings) -> dict[str, str]:
    """The Spark conf that turns authentication and RPC encryption on, secret excluded
    (safe on a spark-submit command line); empty when :func:`authenticates` is false.

    Example:
        >>> auth_conf(load_settings(spark_master="local[2]"))
        {}
    """
    return dict(AUTH_CONF) if authenticates(settings) else {}


def driver_secret_conf(settings: Settings) -> dict[str, str]:
    """``{spark.authenticate.secret: ...}`` for a driver that authenticates, for the
    session builder only; raises :class:`SparkAuthError` when no secret is set.

    Example:
        >>> driver_secret_conf(load_settings(spark_master="local[2]"))
        {}
    """
    if not authenticates(settings):
        return {}
    if settings.spark_auth_secret is None:
        raise SparkAuthError(
            f"The Spark master {settings.spark_master} runs with authentication and this "
            f"job has no secret: set {SECRET_ENV} (in Airflow: the password of the "
            "spark_default connection) to the cluster's secret. For a cluster without "
            "authentication, set EVENTLAKE_SPARK_AUTHENTICATE=false."
        )
    return {SECRET_KEY: settings.spark_auth_secret.get_secret_value()}


def properties_value(text: str) -> str:
    """``text`` escaped as a Java properties value (what Spark's properties files are):
    backslash, separators, comment marks, white space and line ends keep their meaning
    as characters. The file is read as UTF-8, so other characters stay as they are.

    Example:
        >>> properties_value("a b=c\\\\")
        'a\\\\ b\\\\=c\\\\\\\\'
    """
    escapes = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}
    return "".join(escapes.get(char, "\\" + char if char in " =:#!" else char) for char in text)


def daemon_conf(secret: SecretStr) -> str:
    """The ``spark-defaults.conf`` of a master or worker of an authenticated cluster.

    Example:
        >>> daemon_conf(SecretStr("s")).splitlines()[-1]
        'spark.authenticate.secret s'
    """
    lines = [f"{key} {value}" for key, value in AUTH_CONF.items()]
    lines.append(f"{SECRET_KEY} {properties_value(secret.get_secret_value())}")
    return "\n".join(lines) + "\n"


def write_daemon_conf(folder: Path, secret: SecretStr) -> Path:
    """Write :func:`daemon_conf` into ``folder`` (the daemons' ``SPARK_CONF_DIR``),
    readable by its owner only from the start; the file's path.

    Example:
        >>> write_daemon_conf(Path("var/cluster/spark/conf"), SecretStr("s")).name
        'spark-defaults.conf'
    """
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / DAEMON_CONF_FILE
    write_atomically(path, daemon_conf(secret), mode=0o600)
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m eventlake.spark.auth <conf dir>``: write the daemons' conf there from
    ``EVENTLAKE_SPARK_AUTH_SECRET``, for a container's start script."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m eventlake.spark.auth <SPARK_CONF_DIR>", file=sys.stderr)
        return 2
    if not os.environ.get(SECRET_ENV):
        print(f"error: set {SECRET_ENV} to the cluster's secret (.env.example)", file=sys.stderr)
        return 2
    secret = load_settings().spark_auth_secret
    assert secret is not None
    print(f"Spark RPC authentication on: {write_daemon_conf(Path(args[0]), secret)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
