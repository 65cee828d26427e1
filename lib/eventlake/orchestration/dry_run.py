"""The DAGs' last stop before spark-submit: log the commands; a dry run stops there.

Example, in a DAG (``submits`` the output of the plan task)::

    submit_unless_dry_run(INGEST_JOB, submits) >> ingest
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from airflow.sdk import XComArg, task

from eventlake.core.progress import progress_log
from eventlake.orchestration.submit import dry_run_report

_log = progress_log(__name__)

#: The task id of the short-circuit task, the same in every DAG.
TASK_ID: Final = "submit_unless_dry_run"


def log_commands(
    application: str | Path, plan: Sequence[Mapping[str, Any]], *, dry_run: bool
) -> bool:
    """Print the command line of each spark-submit of ``plan``: what will run, or what a
    dry run would run. True when the plan is to be submitted.

    Example:
        >>> log_commands("job.py", [{"application_args": ["--topic", "a"]}], dry_run=True)
        dry run, would run: spark-submit job.py --topic a
        False
    """
    prefix = "dry run, would run: " if dry_run else "will run: "
    for line in dry_run_report(application, plan):
        _log.info(prefix + line)
    return not dry_run


def submit_unless_dry_run(application: str | Path, plan: XComArg) -> XComArg:
    """The short-circuit task between a DAG's plan and its spark-submits: it logs the
    commands of ``plan`` (one submit's keyword arguments, or a list of them) and, on a
    dry run (the ``dry_run`` param), skips the tasks after it. Call it inside the DAG.

    Example:
        >>> submit_unless_dry_run(CHECK_JOB, plan()) >> check
    """

    @task.short_circuit(task_id=TASK_ID)
    def gate(
        submits: dict[str, Any] | list[dict[str, Any]], params: dict[str, Any] | None = None
    ) -> bool:
        """Log the commands; a dry run stops here and the submits are skipped."""
        listed = [submits] if isinstance(submits, Mapping) else submits
        return log_commands(application, listed, dry_run=bool((params or {}).get("dry_run")))

    # Airflow passes the plan task's output, not the XComArg itself, when the task runs.
    result: XComArg = gate(plan)  # type: ignore[arg-type]
    return result
