"""Streaming checkpoints that know what they belong to.

Spark's Kafka source happily reuses a checkpoint for another topic set, and a Delta
sink cannot tell a new query from an old one. eventlake writes an identity file next
to Spark's checkpoint data: the source (topics or pattern), the target tables and a
transaction app id used for idempotent Delta commits. A checkpoint whose identity does
not match the run is refused.

Example:
    >>> identity = claim_checkpoint(path, source="topics:orders", targets=["/wh/events"])
    >>> identity.app_id
    'eventlake-3f0c...'
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

IDENTITY_FILE = "eventlake-identity.json"


class CheckpointMismatchError(RuntimeError):
    """A checkpoint belongs to another source or other tables."""


@dataclass(frozen=True)
class CheckpointIdentity:
    """What a checkpoint was created for, and the app id of its Delta transactions."""

    source: str
    targets: tuple[str, ...]
    app_id: str


def claim_checkpoint(path: Path, *, source: str, targets: list[str]) -> CheckpointIdentity:
    """Return the checkpoint's identity, creating it on first use; refuse a mismatch."""
    identity_file = path / IDENTITY_FILE
    if identity_file.exists():
        stored = json.loads(identity_file.read_text())
        identity = CheckpointIdentity(
            source=stored["source"], targets=tuple(stored["targets"]), app_id=stored["app_id"]
        )
        if identity.source != source or list(identity.targets) != targets:
            raise CheckpointMismatchError(
                f"Checkpoint {path} belongs to source {identity.source!r} writing to "
                f"{list(identity.targets)}, not to source {source!r} writing to {targets}. "
                "Reusing it would skip or mix data. Use another --checkpoint-name, or delete "
                "the checkpoint folder if you really mean to start over."
            )
        return identity
    if path.exists() and any(path.iterdir()):
        raise CheckpointMismatchError(
            f"Checkpoint {path} holds data but no {IDENTITY_FILE}: it was not made by "
            "eventlake for this run. Use another --checkpoint-name."
        )
    path.mkdir(parents=True, exist_ok=True)
    identity = CheckpointIdentity(
        source=source, targets=tuple(targets), app_id=f"eventlake-{uuid.uuid4()}"
    )
    payload = asdict(identity)
    payload["targets"] = list(identity.targets)
    identity_file.write_text(json.dumps(payload, indent=2) + "\n")
    return identity
