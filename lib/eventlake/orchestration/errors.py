"""The one error of the orchestration package."""

from __future__ import annotations

from eventlake.core.errors import Refused


class OrchestrationError(Refused, ValueError):
    """A DAG param or setting cannot be turned into a job run; the message says why."""
