"""Shared fixtures: one real Kafka broker and one SparkSession per test session.

The test broker listens on its own ports (127.0.0.1 only) and keeps its data in a
temporary folder, so it never collides with a broker started by `make demo`. It also
has a SASL/SCRAM listener for the security tests.

Under pytest-xdist (`make test` runs two workers) the controller starts the broker in
the background while the workers start, every worker's ``broker`` fixture waits for it,
and the controller stops it after the last worker is done: one broker for the run.
Each worker has its own SparkSession (a PySpark driver is one per process). Tests of a
module stay together on one worker (their module fixtures run once), and the modules
that share the local Airflow deployment are one group (:data:`XDIST_GROUPS`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from pyspark.sql import SparkSession

from eventlake.core.locations import Location
from eventlake.core.progress import lines_on_stdout
from eventlake.local.broker import BrokerError, LocalBroker
from eventlake.local.s3_server import LocalS3Server, S3ServerError, probe_conditional_put
from eventlake.local.settings import LocalSettings, load_local_settings
from eventlake.spark.session import build_spark_session
from tests import timing

#: The processes that tests start (the CLI, spark-submit, Airflow) import this checkout's
#: eventlake, whatever checkout the venv's editable install points at; pytest itself
#: does so through ``pythonpath`` in pyproject.toml.
CHECKOUT: Final = Path(__file__).resolve().parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(CHECKOUT / "lib"), str(CHECKOUT), os.environ.get("PYTHONPATH")])
)

#: The jobs that tests start as processes (CLI, spark-submit from the DAGs) are short:
#: a JVM compiling with C1 only spends less of the two cores on JIT before it is done
#: (an ingest process of 2,000 events: 27 s instead of 31 s). Same Spark, same results.
os.environ.setdefault("EVENTLAKE_DRIVER_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")

# py4j logs "Closing down clientserver connection" from __del__ at interpreter exit,
# after pytest closed the streams; keep that noise out of CI logs.
logging.getLogger("py4j").setLevel(logging.WARNING)

# The library's progress lines where the eventlake command shows them (stdout, warnings
# on stderr): tests that call the library in-process read them as a user would.
lines_on_stdout()

# Overridable so that two suites can run side by side on one machine.
TEST_BROKER_PORT: Final = int(os.environ.get("EVENTLAKE_TEST_BROKER_PORT", "19092"))
TEST_CONTROLLER_PORT: Final = TEST_BROKER_PORT + 1
TEST_SASL_PORT: Final = TEST_BROKER_PORT + 2
TEST_S3_PORT: Final = TEST_BROKER_PORT + 3
#: The bucket the tests' object-store warehouses live in (each test its own prefix).
TEST_BUCKET: Final = "eventlake-tests"
BROKER_START_TIMEOUT: Final = 120.0

#: Set by the xdist controller for its workers: the folder of the run's shared broker.
SHARED_DIR_ENV: Final = "EVENTLAKE_TEST_SHARED_DIR"
#: Modules that must share a worker, by group: they use one local Airflow deployment.
XDIST_GROUPS: Final = {
    "tests/dags/test_airflow_api.py": "airflow-server",
    "tests/dags/test_ui_screenshot.py": "airflow-server",
    "tests/dags/test_kafka_connection_dag.py": "airflow-server",
    "tests/dags/test_status_plugin.py": "airflow-server",
}


def broker_settings(broker_dir: Path) -> LocalSettings:
    """Settings of the test broker, the test S3 server (beside the broker's folder) and
    of clients on them."""
    return load_local_settings(
        bootstrap_servers=f"127.0.0.1:{TEST_BROKER_PORT}",
        broker_port=TEST_BROKER_PORT,
        controller_port=TEST_CONTROLLER_PORT,
        broker_sasl_port=TEST_SASL_PORT,
        broker_dir=broker_dir,
        s3_server_port=TEST_S3_PORT,
        s3_server_dir=broker_dir.parent / "s3server",
    )


# -- the controller of an xdist run: owns the broker --------------------------------------


def _is_xdist_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", 0))


class _SharedBroker:
    """The run's broker, started in a thread of the xdist controller (so that it comes
    up while the workers import and collect) and stopped when the session ends."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="eventlake-tests-"))
        self.broker = LocalBroker(broker_settings(self.folder / "broker"))
        self.s3_server = LocalS3Server(broker_settings(self.folder / "broker"))
        self.thread = threading.Thread(target=self._start, name="test-broker", daemon=True)

    def _start(self) -> None:
        try:
            self.s3_server.start()
        except S3ServerError as error:
            (self.folder / "s3server-failed.txt").write_text(str(error))
        try:
            self.broker.start(timeout=BROKER_START_TIMEOUT)
        except BrokerError as error:
            (self.folder / "broker-failed.txt").write_text(str(error))

    def pytest_sessionfinish(self) -> None:
        self.thread.join()
        self.broker.stop()
        self.s3_server.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    timing.register(config)
    if _is_xdist_controller(config):
        shared = _SharedBroker()
        os.environ[SHARED_DIR_ENV] = str(shared.folder)  # workers start after this
        shared.thread.start()
        config.pluginmanager.register(shared, "eventlake-shared-broker")


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _group(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, or its module's group."""
    return XDIST_GROUPS.get(_module(nodeid), _module(nodeid))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with groups: the tests of a module go to one worker, and so
    do the modules of one :data:`XDIST_GROUPS` group. (xdist's own ``loadgroup`` does
    not group under pytest 9: it renames items through an attribute pytest no longer
    reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    # Units go out in collection order, which the workers sort longest first (below).
    config.option.loadscopereorder = False
    return ModuleGroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, order the units of work (modules, or groups of modules)
    longest first by :func:`tests.timing.module_seconds`, so that no long module starts
    last while the other worker runs dry. Both workers sort alike, as xdist requires."""
    if not hasattr(config, "workerinput"):
        return
    seconds = timing.module_seconds()
    group_seconds: dict[str, float] = {}
    for module in {_module(item.nodeid) for item in items}:
        group = _group(module)
        # A module never timed counts as long: better early than last.
        group_seconds[group] = group_seconds.get(group, 0.0) + seconds.get(module, 1e6)
    items.sort(key=lambda item: -group_seconds[_group(item.nodeid)])  # stable


def _wait_for_shared(
    what: str,
    failed: Path,
    answers: Callable[[], bool],
    error: type[Exception],
    log_file: Path,
) -> None:
    """Wait until the controller's server ``answers()``; raise ``error`` with the
    controller's reason when it wrote one into ``failed``, or after the start timeout."""
    deadline = time.monotonic() + BROKER_START_TIMEOUT
    while time.monotonic() < deadline:
        if failed.exists():
            raise error(failed.read_text())
        if answers():
            return
        time.sleep(0.2)
    raise error(f"The run's test {what} did not come up; see {log_file}.")


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("eventlake")


@pytest.fixture(scope="session")
def shared_dir() -> Path | None:
    """The xdist controller's folder (broker data), or None in a single-process run."""
    folder = os.environ.get(SHARED_DIR_ENV)
    return Path(folder) if folder else None


@pytest.fixture(scope="session")
def settings(base_dir: Path, shared_dir: Path | None) -> LocalSettings:
    """The session's settings: the test broker's, and the jobs' (a subclass of Settings)."""
    return broker_settings((shared_dir or base_dir) / "broker").model_copy(
        update={
            "warehouse": base_dir / "warehouse",
            "shuffle_partitions": 2,
            "driver_memory": "1g",
            # The session's own driver lives for the whole run: keep the full JIT.
            "driver_java_options": "",
        }
    )


@pytest.fixture(scope="session")
def broker(settings: LocalSettings, shared_dir: Path | None) -> Iterator[LocalBroker]:
    local = LocalBroker(settings)
    if shared_dir is not None:
        _wait_for_shared(
            "broker",
            shared_dir / "broker-failed.txt",
            lambda: local.pid() is not None and local.answers_metadata(timeout=1.0),
            BrokerError,
            local.log_file,
        )
        yield local  # the controller stops it after every worker is done
        return
    local.start(timeout=BROKER_START_TIMEOUT)
    yield local
    # Spark's cached Kafka producers retry a stopped broker once a second until the
    # interpreter exits: stop the session first, so the end of a run stays quiet.
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    local.stop()


@pytest.fixture(scope="session")
def s3_server(settings: LocalSettings, shared_dir: Path | None) -> Iterator[LocalS3Server]:
    """The run's S3 server, its connection in this process's environment (the store
    and the processes tests start read it there), its test bucket made, and its
    conditional PUT probed before any test relies on it."""
    from eventlake.storage import s3_store

    server = LocalS3Server(settings)
    if shared_dir is not None:
        _wait_for_shared(
            "S3 server",
            shared_dir / "s3server-failed.txt",
            lambda: server.pid() is not None and server.answers(),
            S3ServerError,
            server.log_file,
        )
    else:
        server.start()
    os.environ.update(server.environment())
    server.make_bucket(Location.of(f"s3a://{TEST_BUCKET}"))  # or the other worker did
    probe_conditional_put(s3_store.client(), TEST_BUCKET)
    yield server
    if shared_dir is None:
        server.stop()


@pytest.fixture
def s3_warehouse(s3_server: LocalS3Server) -> Location:
    """A warehouse of this test's own on the S3 server."""
    return Location.of(f"s3a://{TEST_BUCKET}/{uuid.uuid4().hex[:12]}/warehouse")


@pytest.fixture(scope="session")
def spark(settings: LocalSettings) -> Iterator[SparkSession]:
    session = build_spark_session(settings, app_name="eventlake-tests")
    yield session
    session.stop()


@pytest.fixture
def topic_name() -> str:
    """A fresh topic name per test, so tests never see each other's records."""
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def warehouse_settings(settings: LocalSettings, tmp_path: Path) -> LocalSettings:
    """The session settings with a warehouse of this test's own."""
    return settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
