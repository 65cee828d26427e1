"""Processes of the local platform: whether one is alive, and stopping it politely.

The broker is one process; each Airflow component is a process group (its own session,
so that its children stop with it). Both stop the same way: SIGTERM, wait, SIGKILL.

Example:
    >>> import subprocess
    >>> sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    >>> alive(sleeper.pid)
    True
    >>> stop([sleeper.pid], group=True, timeout=5)
    >>> alive(sleeper.pid)
    False
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ComponentStatus:
    """What a status says of one process of the local platform: its pid when alive,
    where it serves, whether it answers there, and a detail (workers alive, ...)."""

    name: str
    pid: int | None
    address: str
    answering: bool
    detail: str = ""

    @property
    def running(self) -> bool:
        """Alive and answering."""
        return self.pid is not None and self.answering


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts TCP connections on host:port.

    Example:
        >>> port_in_use(1)
        False
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now.

    Example:
        >>> port_in_use(free_port())
        False
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alive(pid: int, *, group: bool = False) -> bool:
    """True while the process (or, with ``group``, any process of its group) runs.

    Example:
        >>> alive(os.getpid())
        True
    """
    try:
        os.killpg(pid, 0) if group else os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if group:
        return True
    # A zombie still answers kill(0); look at its state to treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie; a process
    that is not our child is left alone."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_gone(pids: Iterable[int], *, group: bool = False, timeout: float = 30.0) -> list[int]:
    """Wait up to ``timeout`` seconds until none of the processes runs (reaping our own
    children); return those still running.

    Example:
        >>> wait_gone([], timeout=1)
        []
    """
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while True:
        for pid in pids:
            reap(pid)
        running = [pid for pid in pids if alive(pid, group=group)]
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.1)


def stop(pids: Iterable[int], *, group: bool = False, timeout: float = 30.0) -> None:
    """SIGTERM each process (or process group) that runs, wait up to ``timeout`` seconds
    for all of them, then SIGKILL what is left and wait for it to go.

    Example:
        >>> stop([], timeout=1)
    """
    kill = os.killpg if group else os.kill

    def send(pid: int, signal_number: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):  # it may end between check and signal
            kill(pid, signal_number)

    running = wait_gone(pids, group=group, timeout=0)
    for pid in running:
        send(pid, signal.SIGTERM)
    for pid in wait_gone(running, group=group, timeout=timeout):
        send(pid, signal.SIGKILL)
    # A group whose members are zombies of other parents can answer for a while: bounded.
    wait_gone(running, group=group, timeout=10)


def spawn(
    command: list[str], *, log: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a long-running process in its own session (so that stopping its group also
    ends its children), stdout and stderr appended to ``log``, no stdin.

    Example:
        >>> sleeper = spawn(["sleep", "60"], log=Path("/tmp/sleep.log"))
        >>> stop([sleeper.pid], group=True, timeout=5)
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=True,
        )


def log_tail(log: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file, or ``(no log)``.

    Example:
        >>> log_tail(Path("/nonexistent.log"))
        '(no log)'
    """
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
