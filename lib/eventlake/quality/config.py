"""Data-quality rules: which checks run on a topic, their thresholds and severities.

The rules live in ``settings.quality`` (environment: ``EVENTLAKE_QUALITY`` as JSON):
``defaults`` apply to every topic, ``topics`` override them field by field for one
topic. A check whose severity is ``error`` fails the run when it fails; ``warning``
only records the failure.

Example:
    >>> config = QualityConfig.model_validate(
    ...     {
    ...         "defaults": {"max_rejects_rate": 0.01},
    ...         "topics": {"orders": {"type_pattern": "^com[.]acme[.]order[.]", "keyed": True,
    ...                               "severity": {"unique_source_id": "error"}}},
    ...     }
    ... )
    >>> rules = config.rules_for("orders")
    >>> rules.keyed, rules.max_rejects_rate, rules.severity_of(CheckName.UNIQUE_SOURCE_ID)
    (True, 0.01, 'error')
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from eventlake.core.errors import Refused
from eventlake.core.settings import place, validation_problems

Severity = Literal["error", "warning"]


class CheckName(StrEnum):
    """The checks of the events table; names as they appear in dq_results and Data Docs."""

    REQUIRED_NOT_NULL = "required_not_null"
    REQUIRED_NOT_EMPTY = "required_not_empty"
    SPECVERSION = "specversion"
    UNIQUE_SOURCE_ID = "unique_source_id"
    SOURCE_URI_REFERENCE = "source_uri_reference"
    TYPE_PATTERN = "type_pattern"
    TIME_PRESENT = "time_present"
    TIME_NOT_FUTURE = "time_not_future"
    DATACONTENTTYPE_MEDIA_TYPE = "datacontenttype_media_type"
    DATASCHEMA_ABSOLUTE_URI = "dataschema_absolute_uri"
    EXTENSION_NAMES = "extension_names"
    PARTITIONKEY_PRESENT = "partitionkey_present"
    ROW_COUNT = "row_count"
    REJECTS_RATE = "rejects_rate"


#: Rules of the CloudEvents spec and promises a topic makes fail the run; duplicates
#: (at-least-once producers), clock skew and volume are only recorded unless configured.
DEFAULT_SEVERITY: Final[dict[CheckName, Severity]] = {
    CheckName.REQUIRED_NOT_NULL: "error",
    CheckName.REQUIRED_NOT_EMPTY: "error",
    CheckName.SPECVERSION: "error",
    CheckName.UNIQUE_SOURCE_ID: "warning",
    CheckName.SOURCE_URI_REFERENCE: "error",
    CheckName.TYPE_PATTERN: "error",
    CheckName.TIME_PRESENT: "error",
    CheckName.TIME_NOT_FUTURE: "warning",
    CheckName.DATACONTENTTYPE_MEDIA_TYPE: "error",
    CheckName.DATASCHEMA_ABSOLUTE_URI: "error",
    CheckName.EXTENSION_NAMES: "error",
    CheckName.PARTITIONKEY_PRESENT: "error",
    CheckName.ROW_COUNT: "warning",
    CheckName.REJECTS_RATE: "error",
}


class QualityConfigError(Refused, ValueError):
    """``EVENTLAKE_QUALITY`` does not describe valid rules; the message says which field."""


class TopicRules(BaseModel):
    """Rules for one topic. In ``topics`` overrides, only the fields given replace defaults.

    Example:
        >>> TopicRules(keyed=True, min_rows=1).enabled(CheckName.PARTITIONKEY_PRESENT)
        True
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    checks: frozenset[CheckName] | None = Field(
        default=None, description="Checks to run; null runs every applicable check."
    )
    type_pattern: str | None = Field(
        default=None,
        description="Java regex that every type must contain a match of (anchor it with ^...$); "
        "no pattern, no type_pattern check.",
    )
    time_required: bool = Field(default=False, description="The topic promises a time attribute.")
    max_future_skew_seconds: float = Field(
        default=300.0, ge=0, description="How far time may lie after the check's start."
    )
    keyed: bool = Field(default=False, description="Every event carries a partitionkey extension.")
    max_extension_name_length: int = Field(
        default=20, ge=1, description="Longest extension attribute name allowed."
    )
    min_rows: int = Field(default=0, ge=0, description="Fewest events expected in a checked slice.")
    max_rows: int | None = Field(
        default=None, ge=0, description="Most events expected in a checked slice; null: no bound."
    )
    max_rejects_rate: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Highest share of rejects among the records of a slice (rejects / (events + "
        "rejects)).",
    )
    severity: dict[CheckName, Severity] = Field(
        default_factory=dict, description="Severity per check; unlisted checks keep the default."
    )

    @model_validator(mode="after")
    def _bounds_in_order(self) -> Self:
        if self.max_rows is not None and self.max_rows < self.min_rows:
            raise ValueError(f"max_rows ({self.max_rows}) is below min_rows ({self.min_rows})")
        return self

    def severity_of(self, check: CheckName) -> Severity:
        """The configured severity of a check, else its default."""
        return self.severity.get(check, DEFAULT_SEVERITY[check])

    def enabled(self, check: CheckName) -> bool:
        """Whether a check runs: selected (or no selection) and configured where it needs to be."""
        if self.checks is not None and check not in self.checks:
            return False
        if check is CheckName.TYPE_PATTERN:
            return self.type_pattern is not None
        if check is CheckName.TIME_PRESENT:
            return self.time_required
        if check is CheckName.PARTITIONKEY_PRESENT:
            return self.keyed
        return True


class QualityConfig(BaseModel):
    """Default rules plus per-topic overrides.

    Example:
        >>> QualityConfig().rules_for("any").max_future_skew_seconds
        300.0
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    defaults: TopicRules = Field(default_factory=TopicRules)
    topics: dict[str, TopicRules] = Field(default_factory=dict)

    def rules_for(self, topic: str) -> TopicRules:
        """The defaults with this topic's overrides applied (severities merged per check)."""
        override = self.topics.get(topic)
        if override is None:
            return self.defaults
        merged = self.defaults.model_dump()
        merged.update(override.model_dump(exclude_unset=True))
        merged["severity"] = {**self.defaults.severity, **override.severity}
        # Validate again: an override may break a cross-field rule (min_rows > max_rows).
        try:
            return TopicRules.model_validate(merged)
        except ValidationError as error:
            problems = validation_problems(error, lambda loc: f"topics.{topic}{place(loc)}")
            raise QualityConfigError(f"EVENTLAKE_QUALITY: {problems}") from None


def load_quality_config(raw: dict[str, Any] | QualityConfig) -> QualityConfig:
    """Validate ``settings.quality`` into rules, with an error that names the bad field.

    Example:
        >>> load_quality_config({"topics": {"orders": {"keyed": True}}}).rules_for("orders").keyed
        True
    """
    if isinstance(raw, QualityConfig):
        return raw
    try:
        config = QualityConfig.model_validate(raw)
    except ValidationError as error:
        problems = validation_problems(error, lambda loc: f"EVENTLAKE_QUALITY{place(loc)}")
        raise QualityConfigError(problems) from None
    for topic in config.topics:
        config.rules_for(topic)  # a topic's overrides may break a rule with the defaults
    return config
