"""Where the library's progress lines go: Python's logging, under the ``eventlake``
logger, so a caller can route, filter or silence them.

The library logs through :func:`progress_log` (``progress_log(__name__).info(...)``) and
never prints. The ``eventlake`` command and the jobs/ scripts call
:func:`lines_on_stdout`: each record then reaches the terminal as its bare message,
progress on stdout and warnings on stderr. Elsewhere (an Airflow task, a notebook)
the records go to the root logger's handlers, as any library's do.

Example:
    >>> lines_on_stdout()
    >>> progress_log("eventlake.ingest.run").info("ingest: batch 0 done, 3 records")
    ingest: batch 0 done, 3 records
"""

from __future__ import annotations

import logging
import sys
from typing import Final

#: The logger every eventlake module's logger is under.
ROOT: Final = "eventlake"


class _CurrentStdout(logging.Handler):
    """Each record's bare message on the stdout of the moment (a test's captured
    stdout too), a warning's on stderr, flushed at once: a job's lines show as they
    happen."""

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stderr if record.levelno >= logging.WARNING else sys.stdout
        try:
            print(self.format(record), file=stream, flush=True)
        except Exception:
            self.handleError(record)


def progress_log(name: str) -> logging.Logger:
    """The logger of module ``name`` (under ``eventlake``).

    Example:
        >>> progress_log("eventlake.runs.streaming").name
        'eventlake.runs.streaming'
    """
    return logging.getLogger(name)


def lines_on_stdout() -> None:
    """Show the library's progress lines as bare messages on stdout (warnings on
    stderr), and only there (idempotent): what the ``eventlake`` command and the jobs do.

    Example:
        >>> lines_on_stdout(); lines_on_stdout()
        >>> len(logging.getLogger(ROOT).handlers)
        1
    """
    logger = logging.getLogger(ROOT)
    if any(isinstance(each, _CurrentStdout) for each in logger.handlers):
        return
    logger.addHandler(_CurrentStdout())
    logger.setLevel(logging.INFO)
    logger.propagate = False
