"""A project-local server on the JVM (the broker, the S3 server): its pid file, its start
(refused on a taken port, waited for until it answers), its stop.

Example:
    >>> class Server(LocalJavaService): ...   # what, record, error, answers, ports, ...
    >>> Server(home).launch(timeout=60.0)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from eventlake.core.errors import EventlakeError
from eventlake.local import processes
from eventlake.local.processes import port_in_use


def java_executable(error: type[EventlakeError]) -> str:
    """``$JAVA_HOME/bin/java`` when there is one, else ``java`` on the PATH; ``error``
    with a sentence when neither is there.

    Example:
        >>> java_executable(BrokerError)
        '/usr/lib/jvm/java-17/bin/java'
    """
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / "java" if java_home else None
    if candidate and candidate.exists():
        return str(candidate)
    found = shutil.which("java")
    if not found:
        raise error("No java found: install a JDK 17+ or set JAVA_HOME.")
    return found


class LocalJavaService(ABC):
    """What the local servers share; a subclass says what it is and how it starts.

    Example:
        >>> LocalBroker(settings).launch(timeout=60.0)  # a subclass
    """

    #: The server in words, as messages name it ("broker", "S3 server").
    what: ClassVar[str]
    #: Its name in the pid file.
    record: ClassVar[str]
    #: The error it raises, with a sentence.
    error: ClassVar[type[EventlakeError]]
    #: Seconds between two probes while it starts.
    poll_seconds: ClassVar[float] = 0.5

    home: Path
    log_file: Path
    pid_file: Path

    @property
    @abstractmethod
    def address(self) -> str:
        """Where it listens, as messages name it."""

    @abstractmethod
    def answers(self, timeout: float = 1.0) -> bool:
        """Whether it answers a request within ``timeout`` seconds."""

    @abstractmethod
    def ports(self) -> dict[int, str]:
        """The ports it listens on, each with the setting that picks another one."""

    @abstractmethod
    def prepared_command(self) -> list[str]:
        """Its configuration written and its storage made; the command that runs it."""

    def pid(self) -> int | None:
        """Pid of the server while it runs, else None (a stale pid file, whose pid is
        gone or now another process's, is removed)."""
        running = processes.running_records(self.pid_file)
        if self.record in running:
            return running[self.record]
        self.pid_file.unlink(missing_ok=True)
        return None

    def launch(self, timeout: float = 60.0) -> None:
        """Start the server unless it runs already; wait until it answers."""
        if (pid := self.pid()) is not None:
            if not self._wait_ready(timeout, None):
                raise self.error(
                    f"{self.what.capitalize()} process {pid} runs but does not answer on "
                    f"{self.address}; see {self.log_file}."
                )
            return
        for port, setting in self.ports().items():
            if port_in_use(port):
                raise self.error(
                    f"Port {port} on 127.0.0.1 is already taken by another process, so the "
                    f"local {self.what} cannot start. Stop that process, or pick a free port "
                    f"with {setting}."
                )
        self.home.mkdir(parents=True, exist_ok=True)
        command = self.prepared_command()
        with open(self.log_file, "ab") as log:
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.home,
            )
        processes.write_records(self.pid_file, {self.record: processes.Recorded.of(process.pid)})
        if not self._wait_ready(timeout, process):
            self.stop()
            raise self.error(
                f"The {self.what} did not answer on {self.address} within {timeout:.0f}s. "
                f"Last lines of {self.log_file}:\n{processes.log_tail(self.log_file)}"
            )

    def _wait_ready(self, timeout: float, process: subprocess.Popen[bytes] | None) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise self.error(
                    f"The {self.what} exited with code {process.returncode} while starting. "
                    f"Last lines of {self.log_file}:\n{processes.log_tail(self.log_file)}"
                )
            if self.answers(timeout=1.0):
                return True
            time.sleep(self.poll_seconds)
        return False

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the server (SIGTERM, then SIGKILL). Returns False when it was not running."""
        pid = self.pid()
        if pid is None:
            return False
        processes.stop([pid], timeout=timeout)
        self.pid_file.unlink(missing_ok=True)
        return True
