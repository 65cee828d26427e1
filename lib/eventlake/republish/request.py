"""What a republish run is asked to do: :class:`RepublishRequest` (the ``eventlake
republish`` options, checked when the request is made) and :class:`RepublishError`.

A request that could harm the events is refused before anything runs: header transforms
may never touch the headers that carry the event (``ce_*`` and ``content-type``) nor the
append-only routing trail, and an attribute may only be taken from a header when the
event is converted to structured mode.

Example:
    >>> RepublishRequest(source="a", target="b", drop_headers=("ce_id",))
    Traceback (most recent call last):
    RepublishError: --drop-header 'ce_id': CloudEvents headers (ce_*, content-type) carry ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from eventlake.binding.decode import (
    ATTRIBUTE_NAME_PATTERN,
    CE_PREFIX,
    CONTENT_MODE_BINARY,
    CONTENT_MODE_STRUCTURED,
    CONTENT_TYPE_HEADER,
    CONTEXT_ATTRIBUTES,
    DATA_MEMBERS,
    PARTITIONKEY,
)
from eventlake.binding.encode import Hop
from eventlake.core.errors import Refused
from eventlake.ledger.checkpoint import route_checkpoint_name
from eventlake.runs.request_checks import request_problem
from eventlake.runs.triggers import AVAILABLE_NOW

KEEP: Final = "keep"
ATTRIBUTE_PREFIX: Final = "attribute:"
ON_MISSING_CHOICES: Final = ("keep-key", "null-key", "reject")
TO_MODE_CHOICES: Final = (KEEP, CONTENT_MODE_BINARY, CONTENT_MODE_STRUCTURED)
CLEANUP_POLICIES: Final = ("compact", "delete", "compact,delete")
DEFAULT_TRAIL_HEADER: Final = "eventlake-trail"


class RepublishError(Refused, ValueError):
    """A republish run cannot start as asked; the message says what to change."""


def is_protected_header(name: str) -> bool:
    """Headers that carry the CloudEvent: no header transform may touch them."""
    lowered = name.lower()
    return lowered.startswith(CE_PREFIX) or lowered == CONTENT_TYPE_HEADER


def parse_pair(text: str, *, option: str) -> tuple[str, str]:
    """``"left=right"`` -> ``("left", "right")`` (split at the first ``=``).

    Example:
        >>> parse_pair("origin=eu=west", option="--insert-header")
        ('origin', 'eu=west')
    """
    left, sep, right = text.partition("=")
    if not sep or not left:
        raise RepublishError(f"{option} takes NAME=VALUE, got {text!r}")
    return left, right


@dataclass(frozen=True, kw_only=True)
class RepublishRequest(Hop):
    """What to republish and how; mirrors the ``eventlake republish`` options. The header
    options and the trail are the :class:`~eventlake.binding.encode.Hop`'s, declared there
    once; :meth:`hop` gives them to the encoder.

    Example:
        >>> RepublishRequest(source="raw", target="by-entity", key_mapper="attribute:subject",
        ...                  on_missing="reject", to_mode="binary", drop_headers=("debug",))
    """

    source: str
    #: The topic written to, as the routing trail's entries name it.
    target: str
    key_mapper: str = KEEP
    on_missing: str = "keep-key"
    to_mode: str = KEEP
    allow_tombstone_to_structured: bool = False
    allow_no_data_to_binary: bool = False
    trigger: str = AVAILABLE_NOW
    starting_offsets: str = "earliest"
    ending_offsets: str | None = None
    #: Partitions of a target created here; default: as many as the source has.
    partitions: int | None = None
    #: cleanup.policy of a target created here; default: the broker's (delete).
    cleanup_policy: str | None = None
    #: Routing-trail header appended per hop; None for no trail. (header_attributes:
    #: only with to_mode="structured".)
    trail_header: str | None = DEFAULT_TRAIL_HEADER
    checkpoint_name: str | None = None

    def __post_init__(self) -> None:
        problem = request_problem(
            (("--source", self.source), ("--target", self.target)),
            checkpoint_name=self.checkpoint_name,
            trigger=self.trigger,
            offsets=(self.starting_offsets, self.ending_offsets),
        )
        if problem:
            raise RepublishError(problem)
        if self.source == self.target:
            raise RepublishError(
                "--source and --target are the same topic: every record would be read back "
                "and republished again. Use another target."
            )
        self._check_key_mapper()
        if self.on_missing not in ON_MISSING_CHOICES:
            raise RepublishError(f"--on-missing must be one of {', '.join(ON_MISSING_CHOICES)}")
        if self.to_mode not in TO_MODE_CHOICES:
            raise RepublishError(f"--to-mode must be one of {', '.join(TO_MODE_CHOICES)}")
        if self.bounded and self.trigger != AVAILABLE_NOW:
            raise RepublishError(
                "--ending-offsets makes a bounded batch run, which takes no --trigger."
            )
        if self.partitions is not None and self.partitions < 1:
            raise RepublishError("--partitions must be at least 1")
        if self.cleanup_policy is not None and self.cleanup_policy not in CLEANUP_POLICIES:
            raise RepublishError(f"--cleanup-policy must be one of {', '.join(CLEANUP_POLICIES)}")
        self._check_headers()

    def _check_key_mapper(self) -> None:
        if self.key_mapper in (KEEP, PARTITIONKEY):
            return
        if not self.key_mapper.startswith(ATTRIBUTE_PREFIX):
            raise RepublishError(
                f"Unknown key mapper {self.key_mapper!r}: use 'keep', 'partitionkey' or "
                "'attribute:<name>' (e.g. attribute:subject)."
            )
        _check_attribute_name(self.key_mapper[len(ATTRIBUTE_PREFIX) :], "--key-mapper")

    def _check_headers(self) -> None:
        trail = self.trail_header
        if trail is not None and (not trail or is_protected_header(trail)):
            raise RepublishError(
                f"--trail-header {trail!r}: the trail must be a header of its own, "
                "not a CloudEvents header (ce_*, content-type)"
            )
        written = [name for name, _ in self.insert_headers] + [
            name for _, name in self.attribute_headers
        ]
        for option, names in (
            ("--insert-header/--attribute-header", written),
            ("--drop-header", list(self.drop_headers)),
            ("--header-attribute", [name for name, _ in self.header_attributes]),
        ):
            for name in names:
                if not name:
                    raise RepublishError(f"{option}: a header name cannot be empty")
                if is_protected_header(name):
                    raise RepublishError(
                        f"{option} {name!r}: CloudEvents headers (ce_*, content-type) carry "
                        "the event and cannot be changed by header transforms; use --to-mode "
                        "to convert the content mode instead"
                    )
                if name == trail:
                    raise RepublishError(
                        f"{option} {name!r}: the routing trail header is append-only"
                    )
        for attribute, _ in self.attribute_headers:
            _check_attribute_name(attribute, "--attribute-header")
        if self.header_attributes and self.to_mode != CONTENT_MODE_STRUCTURED:
            raise RepublishError(
                "--header-attribute adds an attribute to the event, which is only done when "
                "converting with --to-mode structured"
            )
        extensions = [attribute for _, attribute in self.header_attributes]
        for attribute in extensions:
            _check_attribute_name(attribute, "--header-attribute")
            if attribute in CONTEXT_ATTRIBUTES:
                raise RepublishError(
                    f"--header-attribute {attribute!r}: only extension attributes can be "
                    "taken from a header"
                )
        if len(set(extensions)) != len(extensions):
            raise RepublishError("--header-attribute names the same attribute twice")

    @property
    def bounded(self) -> bool:
        return self.ending_offsets is not None

    @property
    def key_attribute(self) -> str | None:
        """The attribute the key comes from; None for the ``keep`` mapper."""
        if self.key_mapper == PARTITIONKEY:
            return PARTITIONKEY
        if self.key_mapper.startswith(ATTRIBUTE_PREFIX):
            return self.key_mapper[len(ATTRIBUTE_PREFIX) :]
        return None

    @property
    def needs_event(self) -> bool:
        """Whether every record must be a valid CloudEvent (else it is rejected)."""
        return self.key_attribute is not None or self.to_mode != KEEP

    def default_checkpoint_name(self) -> str:
        return route_checkpoint_name(self.source, self.target)


def _check_attribute_name(name: str, option: str) -> None:
    if not re.fullmatch(ATTRIBUTE_NAME_PATTERN, name) or name in DATA_MEMBERS:
        raise RepublishError(
            f"{option}: {name!r} is not an attribute name (lowercase letters and digits)"
        )
