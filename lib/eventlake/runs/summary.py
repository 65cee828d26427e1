"""What every ingest and republish run counts (:class:`RunSummary`): records read, those
it wrote and those it rejected by reason, batches, seconds and the signal that stopped
it; and the parts of the summary and progress lines that read alike for both jobs.

Each job extends it with its own counts and the names its lines give the two totals
(``events``/``rejects`` for ingest, ``republished``/``rejected`` for republish).

Example:
    >>> summary = IngestSummary()
    >>> summary.add_batch({None: 117, "plain_tombstone": 3})
    >>> summary.counts_text()
    'batches=1 read=120 events=117 rejects=3'
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar


@dataclass(kw_only=True)
class RunSummary:
    """Counts of one run, batch by batch (a bounded run is one batch)."""

    #: What the lines call the records written and the records rejected.
    accepted_label: ClassVar[str] = "accepted"
    rejected_label: ClassVar[str] = "rejected"

    records_read: int = 0
    #: Records with no reject reason: written to the job's target.
    accepted: int = 0
    rejects_by_reason: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    seconds: float = 0.0
    #: The signal that stopped the run (None: it ended on its own).
    stopped_by: str | None = None

    @property
    def rejects(self) -> int:
        return sum(self.rejects_by_reason.values())

    def add_batch(self, counts: dict[str | None, int]) -> None:
        """Count one batch from its records per reason (None: accepted).

        Example:
            >>> summary.add_batch({None: 8, "malformed_json": 2})
            >>> (summary.records_read, summary.accepted, summary.rejects)
            (10, 8, 2)
        """
        self.batches += 1
        for reason, count in counts.items():
            self.records_read += count
            if reason is None:
                self.accepted += count
            else:
                self.rejects_by_reason[reason] += count

    def counts_text(self) -> str:
        """The counts so far, for progress lines: ``batches=3 read=120 events=117 rejects=3``."""
        return f"batches={self.batches} read={self.records_read} {self._totals()}"

    def _line(self, head: str, *, after_reasons: str = "", after_seconds: str = "") -> str:
        """The summary line: ``<head>: read=... <totals> (<reasons>)<after_reasons>
        batches=... seconds=...<after_seconds> stopped_by=...``, each job adding its own
        counts where its line always had them."""
        reasons = ", ".join(f"{r}={n}" for r, n in sorted(self.rejects_by_reason.items()))
        return (
            f"{head}: read={self.records_read} {self._totals()}"
            + (f" ({reasons})" if reasons else "")
            + after_reasons
            + f" batches={self.batches} seconds={self.seconds:.1f}"
            + after_seconds
            + (f" stopped_by={self.stopped_by}" if self.stopped_by else "")
        )

    def _totals(self) -> str:
        return f"{self.accepted_label}={self.accepted} {self.rejected_label}={self.rejects}"
