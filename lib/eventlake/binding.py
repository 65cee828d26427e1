"""The CloudEvents Kafka protocol binding (v1.0.3), as Spark column expressions.

This module is the one place that holds the binding's rules for a receiver:

* content mode (3): a ``content-type`` header starting with ``application/cloudevents``
  means structured mode, anything else binary mode. ce_ headers on a structured record
  do not make it binary (3.3.3).
* structured mode (3.3): only the JSON event format (1.4) is decoded; another format or
  the batch media type is a reject (the raw record stays in the rejects table).
* binary mode (3.2): attributes from ``ce_`` headers with UTF-8 keys and values,
  ``content-type`` is ``datacontenttype``, the record value is the data as-is; no value
  means an event with no data (a tombstone on a compacted topic, 3.2.2).
* validation: required attributes present and non-empty, specversion 1.0, RFC 3339
  time, attribute names of lowercase letters and digits. Nothing is defaulted.

Everything runs inside Spark's JVM (higher-order functions, VARIANT JSON parsing): no
per-record Python. Every input row gets either a null ``reject_reason`` (a valid event)
or one of the stable codes in :class:`RejectReason`.

Example:
    >>> raw = spark.read.format("kafka").option("includeHeaders", "true")...load()
    >>> decoded = decode_records(raw)
    >>> events, rejects = to_events(decoded), to_rejects(decoded)
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

CE_PREFIX: Final = "ce_"
CONTENT_TYPE_HEADER: Final = "content-type"
CLOUDEVENTS_MEDIA_PREFIX: Final = "application/cloudevents"
JSON_FORMAT_MEDIA_TYPE: Final = "application/cloudevents+json"
BATCH_MEDIA_PREFIX: Final = "application/cloudevents-batch"
SPEC_VERSION: Final = "1.0"

REQUIRED_ATTRIBUTES: Final = ("id", "source", "specversion", "type")
OPTIONAL_ATTRIBUTES: Final = ("datacontenttype", "dataschema", "subject", "time")
CONTEXT_ATTRIBUTES: Final = REQUIRED_ATTRIBUTES + OPTIONAL_ATTRIBUTES
#: Members of a JSON-format event that carry the data rather than an attribute.
DATA_MEMBERS: Final = ("data", "data_base64")

ATTRIBUTE_NAME_PATTERN: Final = "^[a-z0-9]+$"
RFC3339_PATTERN: Final = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
#: Longest detail text stored with a reject; hostile records can have huge names.
DETAIL_MAX_CHARS: Final = 500
#: Spark's documented timestamp range, years 0001 to 9999 in UTC, as microseconds since
#: the epoch. An RFC 3339 time whose offset moves it outside (0001-01-01T00:30:00+01:00,
#: 9999-12-31T23:59:59-01:00) would otherwise land in events as year 0 or +10000, which
#: Python readers of the table cannot convert ("year 0 is out of range").
MIN_TIME_MICROS: Final = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
MAX_TIME_MICROS: Final = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z

JSON_WHITESPACE: Final = "[ \\t\\n\\r]"
#: One JSON string token; possessive quantifiers so that long strings cannot backtrack.
_JSON_STRING: Final = '"(?:[^"\\\\]++|\\\\.)*+"'
_JSON_SCALAR: Final = '^(-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?|""|true|false|null)$'

CONTENT_MODE_BINARY: Final = "binary"
CONTENT_MODE_STRUCTURED: Final = "structured"


class RejectReason(StrEnum):
    """Stable, machine-readable reasons a Kafka record is not a valid CloudEvent."""

    PLAIN_TOMBSTONE = "plain_tombstone"
    UNSUPPORTED_BATCH_MODE = "unsupported_batch_mode"
    UNSUPPORTED_EVENT_FORMAT = "unsupported_event_format"
    INVALID_HEADER_ENCODING = "invalid_header_encoding"
    DUPLICATE_HEADER = "duplicate_header"
    MALFORMED_JSON = "malformed_json"
    INVALID_ATTRIBUTE_NAME = "invalid_attribute_name"
    INVALID_ATTRIBUTE_TYPE = "invalid_attribute_type"
    NOT_A_CLOUDEVENT = "not_a_cloudevent"
    MISSING_REQUIRED_ATTRIBUTE = "missing_required_attribute"
    EMPTY_REQUIRED_ATTRIBUTE = "empty_required_attribute"
    UNSUPPORTED_SPECVERSION = "unsupported_specversion"
    INVALID_TIME = "invalid_time"
    DATA_AND_DATA_BASE64 = "data_and_data_base64"
    INVALID_DATA_BASE64 = "invalid_data_base64"
    CONFLICTING_DATACONTENTTYPE = "conflicting_datacontenttype"


EVENT_COLUMNS: Final = (
    "id",
    "source",
    "specversion",
    "type",
    "datacontenttype",
    "dataschema",
    "subject",
    "time",
    "data",
    "extensions",
    "content_mode",
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
    "kafka_timestamp",
    "kafka_key",
    "ingested_at",
)
REJECT_COLUMNS: Final = (
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
    "kafka_timestamp",
    "kafka_key",
    "kafka_value",
    "kafka_headers",
    "reason",
    "detail",
    "rejected_by",
    "ingested_at",
)
#: ``rejected_by`` of the ingest job's rejects; republish writes ``republish:<target>``.
INGEST_JOB: Final = "ingest"

_HEADERS_TYPE: Final = "array<struct<key:string,value:binary>>"


def jvm_full_match(pattern: str) -> str:
    """``pattern`` (anchored with ``^...$``) for Spark's ``rlike``, which runs Java's regex
    engine: there ``$`` also matches before a final line terminator, so ``^[a-z0-9]+$``
    accepts ``"id\\n"`` and the RFC 3339 pattern a time followed by a newline. ``\\z`` is
    the very end of the text. (Python callers keep the plain pattern with ``re.fullmatch``.)

    Example:
        >>> jvm_full_match("^[a-z0-9]+$")
        '^[a-z0-9]+\\\\z'
    """
    return pattern.removesuffix("$") + "\\z"


def _sql_list(names: tuple[str, ...]) -> str:
    return ", ".join(f"'{name}'" for name in names)


def _binary_attribute(name: str) -> Column:
    """Value of the (first) ce_<name> header as a string, null when the header is absent.

    A position lookup in the names array runs as generated code, where a ``filter``
    lambda per attribute would be interpreted for every header of every record.
    """
    position = f"cast(nullif(array_position(_ce_names, '{name}'), 0) AS int)"
    return F.expr(f"element_at(_ce_values, {position})")


def _names_certainly_valid(names: Column) -> Column:
    """True when every name in the array is lowercase letters and digits, decided over
    the comma-joined names instead of with one regular expression per name; false means
    "look name by name". The character class has no group, so Java's regex engine does
    not recurse per name (thousands of headers would overflow its stack); a name holding
    a comma would join into valid-looking parts, so the comma count must match too.
    """
    joined = F.array_join(names, ",")
    commas = F.length(joined) - F.length(F.replace(joined, F.lit(","), F.lit("")))
    return F.coalesce(
        joined.rlike("^[a-z0-9,]*+\\z")
        & (commas == F.greatest(F.size(names) - 1, F.lit(0)))
        & ~F.array_contains(names, ""),
        F.lit(False),
    )


#: The members a JSON-format event is read into, in one lookup (see ``_attrs``).
_JSON_ATTRIBUTES_TYPE: Final = (
    "struct<"
    + ", ".join(f"{name}:string" for name in (*CONTEXT_ATTRIBUTES, "data_base64"))
    + ", data:variant>"
)


def _is_json_media_type(media_type: Column) -> Column:
    """JSON-format rule: data is a JSON value when datacontenttype is JSON or absent."""
    base = F.lower(F.trim(F.split(media_type, ";").getItem(0)))
    return media_type.isNull() | base.isin("application/json", "text/json") | base.endswith("+json")


def single_json_shape(text: Column) -> Column:
    """True when ``text`` has the shape of exactly one JSON value (whitespace around it
    allowed); meant for text that also parses.

    Spark's JSON parser stops after the first complete value and ignores what follows
    (``{"a":1}}`` parses), so parsing alone is not enough. The common case is settled by
    one more parse (:func:`wrapped_for_shape`); only text that it cannot vouch for takes
    the bracket walk (:func:`_single_value_by_scan`), which is exact but runs regular
    expressions over the whole text (the top cost of ingest in the profile).

    Example:
        >>> df.where(single_json_value(F.col("text")))
    """
    return F.when(_single_value_by_parse(text, wrapped_for_shape(text)), F.lit(True)).otherwise(
        _single_value_by_scan(text)
    )


#: Appended after the text as a second array element by :func:`wrapped_for_shape`. It
#: starts with a rare byte (DEL, legal unescaped in a JSON string) because Spark's
#: ``contains`` only compares the whole needle where the first byte matches: a common
#: first letter made the sentinel test a top cost of decoding structured values.
_END_SENTINEL: Final = "\x7feventlake-end-of-value-5b1f"


def wrapped_for_shape(text: Column) -> Column:
    """``[<text>,"<sentinel>"]`` parsed to a VARIANT (null when it does not parse): the
    input of the fast single-value test.

    Example:
        >>> df.withColumn("_wrapped", wrapped_for_shape(F.col("text")))
    """
    return F.try_parse_json(F.concat(F.lit("["), text, F.lit(f',"{_END_SENTINEL}"]')))


def _single_value_by_parse(text: Column, wrapped: Column) -> Column:
    """True only when ``text`` is certainly one JSON value; false when undecided.

    The wrapped text parses to a two-element array ending in the sentinel exactly when
    the text is one value with nothing but whitespace after it: trailing garbage breaks
    the array or adds elements. Text holding a backslash (an escaped sentinel) or the
    sentinel itself could fake the ending, so it is left undecided, as is text nested so
    deep that the extra bracket breaks the parse.
    """
    return F.coalesce(_can_vouch(text) & _wrapped_is_single(wrapped), F.lit(False))


def _can_vouch(text: Column) -> Column:
    """Text for which the wrapped parse can decide: no backslash, no sentinel."""
    return ~text.contains("\\") & ~text.contains(_END_SENTINEL)


def _wrapped_is_single(wrapped: Column) -> Column:
    """The wrapped parse is a two-element array ending in the sentinel."""
    return F.coalesce(
        (F.try_variant_get(wrapped, "$[1]", "string") == _END_SENTINEL)
        & F.try_variant_get(wrapped, "$[2]", "string").isNull(),
        F.lit(False),
    )


def _single_value_by_scan(text: Column) -> Column:
    """True when ``text`` is one JSON value by a bracket walk with strings blanked out:
    the brackets must come back to depth zero exactly once, at the end, or the trimmed
    text is a bare scalar."""
    blanked = F.regexp_replace(text, _JSON_STRING, '""')
    trimmed = F.regexp_replace(blanked, f"^{JSON_WHITESPACE}+|{JSON_WHITESPACE}+$", "")
    brackets = F.regexp_replace(blanked, "[^\\[\\]{}]+", "")

    def step(acc: Column, c: Column) -> Column:
        depth = acc["depth"] + F.when(c.isin("{", "["), 1).otherwise(-1)
        closes = acc["closes"] + F.when(depth == 0, 1).otherwise(0)
        return F.struct(depth.alias("depth"), closes.alias("closes"))

    walk = F.aggregate(
        F.split(brackets, ""),
        F.struct(F.lit(0).alias("depth"), F.lit(0).alias("closes")),
        step,
    )
    container = trimmed.rlike("(?s)^[\\[{].*[\\]}]$") & (walk["depth"] == 0) & (walk["closes"] == 1)
    scalar = trimmed.rlike(_JSON_SCALAR)
    return F.coalesce(container | scalar, F.lit(False))


def single_json_value(text: Column) -> Column:
    """True when ``text`` parses as JSON and holds exactly one value (see
    :func:`single_json_shape` for why parsing alone is not enough).

    Example:
        >>> df.where(single_json_value(F.col("text")))
    """
    return F.coalesce(F.try_parse_json(text).isNotNull() & single_json_shape(text), F.lit(False))


def decode_records(records: DataFrame) -> DataFrame:
    """Apply the binding to Kafka source rows (``includeHeaders=true``).

    The result keeps the raw columns and adds the event attributes, ``reject_reason``
    and ``reject_detail``. Split it with :func:`to_events` and :func:`to_rejects`.

    Example:
        >>> decoded = decode_records(spark.read.format("kafka")...load())
        >>> decoded.groupBy("reject_reason").count().show()
    """
    known_members = _sql_list(CONTEXT_ATTRIBUTES + DATA_MEMBERS)
    context_members = _sql_list(CONTEXT_ATTRIBUTES)

    staged = (
        records.withColumns(
            {
                "_headers": F.expr(f"coalesce(headers, cast(array() as {_HEADERS_TYPE}))"),
            }
        )
        .withColumns(
            {
                "_ct_headers": F.expr(f"filter(_headers, h -> h.key = '{CONTENT_TYPE_HEADER}')"),
                "_ce_headers": F.expr(f"filter(_headers, h -> startswith(h.key, '{CE_PREFIX}'))"),
            }
        )
        .withColumns(
            {
                "_content_type": F.expr("cast(try_element_at(_ct_headers, 1).value as string)"),
                "_ct_count": F.size("_ct_headers"),
                "_ce_names": F.expr("transform(_ce_headers, h -> substring(h.key, 4))"),
                "_ce_values": F.expr("transform(_ce_headers, h -> cast(h.value as string))"),
            }
        )
        .withColumns(
            {
                "_media_type": F.lower(F.trim(F.split("_content_type", ";").getItem(0))),
                "_structured": F.coalesce(
                    F.lower(F.ltrim("_content_type")).startswith(CLOUDEVENTS_MEDIA_PREFIX),
                    F.lit(False),
                ),
            }
        )
    )
    staged = staged.withColumns(
        {
            "content_mode": F.when(F.col("_structured"), CONTENT_MODE_STRUCTURED).otherwise(
                CONTENT_MODE_BINARY
            ),
            "_json_format": F.col("_structured") & (F.col("_media_type") == JSON_FORMAT_MEDIA_TYPE),
            # Only a JSON-format value is read as text; binary-mode data stays bytes.
            "_value_utf8": F.when(
                F.col("_structured") & (F.col("_media_type") == JSON_FORMAT_MEDIA_TYPE),
                F.expr("is_valid_utf8(cast(value as string))"),
            ),
            # Header problems only matter in binary mode, where headers carry the event.
            # Checked over the values joined with an ASCII separator, which is valid UTF-8
            # exactly when every value is (UTF-8 resynchronises at an ASCII byte): inside a
            # lambda, is_valid_utf8 looks its method up by reflection for every header.
            "_bad_encoding": F.expr(
                "exists(_ce_values, v -> v IS NULL) OR exists(_ct_headers, h -> h.value IS NULL)"
                " OR NOT is_valid_utf8(concat(array_join(_ce_values, ','), ',', array_join("
                "transform(_ct_headers, h -> cast(h.value as string)), ',')))"
                " OR contains(array_join(_ce_names, ','), '\ufffd')"
            ),
            # The name-by-name lists below only run when a cheap test finds a problem.
            "_duplicate_names": F.expr(
                "CASE WHEN size(array_distinct(_ce_names)) < size(_ce_names) THEN "
                "array_distinct(filter(_ce_names, n -> size(filter(_ce_names, m -> m = n)) > 1)) "
                "ELSE array() END"
            ),
            "_bad_binary_names": F.when(
                _names_certainly_valid(F.col("_ce_names"))
                & ~F.arrays_overlap("_ce_names", F.array(*[F.lit(m) for m in DATA_MEMBERS])),
                F.array().cast("array<string>"),
            ).otherwise(
                F.filter(
                    "_ce_names",
                    lambda n: (
                        ~n.rlike(jvm_full_match(ATTRIBUTE_NAME_PATTERN)) | n.isin(*DATA_MEMBERS)
                    ),
                )
            ),
        }
    )
    # Structured JSON: parse once into a VARIANT and look members up by name. The
    # parse of the wrapped text (see single_json_shape) also yields the value itself, so
    # text it vouches for is parsed once; the rest is parsed alone and scanned.
    # Each column below is copied at every step of the plan: the value's text is
    # recomputed where needed (a cast of the bytes) instead of carried along.
    value_text = F.col("value").cast("string")
    parseable = F.col("_json_format") & F.col("value").isNotNull() & F.col("_value_utf8")
    staged = (
        staged.withColumn(
            "_wrapped",
            F.when(
                parseable & _can_vouch(value_text),
                wrapped_for_shape(value_text),
            ),
        )
        .withColumn("_single_by_parse", _wrapped_is_single(F.col("_wrapped")))
        .withColumn(
            "_json",
            F.when(
                F.col("_single_by_parse"), F.expr("variant_get(_wrapped, '$[0]', 'variant')")
            ).when(parseable, F.try_parse_json(value_text)),
        )
        .withColumn(
            "_members",
            # Null unless the value is an object. (schema_of_variant would print the
            # schema of the whole event, nested data included, for every record.)
            F.expr("try_variant_get(_json, '$', 'map<string,variant>')"),
        )
        .withColumns(
            {
                "_bad_json_names": F.when(
                    _names_certainly_valid(F.array_remove(F.map_keys("_members"), "data_base64")),
                    F.array().cast("array<string>"),
                ).otherwise(
                    F.filter(
                        F.map_keys("_members"),
                        lambda k: (
                            ~k.rlike(jvm_full_match(ATTRIBUTE_NAME_PATTERN)) & (k != "data_base64")
                        ),
                    )
                ),
                "_bad_json_types": F.expr(
                    "map_keys(map_filter(_members, (k, v) -> CASE "
                    "WHEN k = 'data' THEN false "
                    f"WHEN k IN ({context_members}, 'data_base64') "
                    "THEN schema_of_variant(v) NOT IN ('STRING', 'VOID') "
                    "ELSE substring(schema_of_variant(v), 1, 5) IN ('OBJEC', 'ARRAY') END))"
                ),
                # Every attribute in one cast of the object, where a map lookup, a type
                # test and a cast per member were a top cost. The cast turns a number or
                # boolean into text, but such a member is rejected above as
                # invalid_attribute_type before any attribute is looked at.
                "_attrs": F.expr(f"try_variant_get(_json, '$', '{_JSON_ATTRIBUTES_TYPE}')"),
                "_json_parsed": F.col("_json").isNotNull(),
            }
        )
        .withColumns(
            {
                "_json_has_data": F.expr(
                    # is_variant_null is false for SQL NULL (no data member).
                    "coalesce(_attrs.data IS NOT NULL AND NOT is_variant_null(_attrs.data), false)"
                ),
                "_json_data_base64": F.col("_attrs.data_base64"),
            }
        )
    )

    # Attributes: from headers in binary mode, from JSON members in structured mode.
    attributes: dict[str, Column] = {}
    for name in CONTEXT_ATTRIBUTES:
        binary_value = _binary_attribute(name)
        if name == "datacontenttype":
            binary_value = F.coalesce(F.col("_content_type"), binary_value)
        attributes[f"_a_{name}"] = F.when(F.col("_structured"), F.col(f"_attrs.{name}")).otherwise(
            binary_value
        )
    staged = staged.withColumns(attributes)

    staged = staged.withColumns(
        {
            "_missing": F.expr(
                "CASE WHEN "
                + " OR ".join(f"_a_{n} IS NULL" for n in REQUIRED_ATTRIBUTES)
                + " THEN filter(array("
                + ", ".join(f"IF(_a_{n} IS NULL, '{n}', NULL)" for n in REQUIRED_ATTRIBUTES)
                + "), x -> x IS NOT NULL) ELSE array() END"
            ),
            "_empty": F.expr(
                "CASE WHEN "
                + " OR ".join(f"_a_{n} = ''" for n in REQUIRED_ATTRIBUTES)
                + " THEN filter(array("
                + ", ".join(f"IF(_a_{n} = '', '{n}', NULL)" for n in REQUIRED_ATTRIBUTES)
                + "), x -> x IS NOT NULL) ELSE array() END"
            ),
            # RFC 3339 5.6 allows a lower-case "t" and "z"; Spark's cast only takes "T"/"Z".
            "_time": F.expr("try_cast(upper(_a_time) AS timestamp)"),
            "_data_base64_bytes": F.expr("try_to_binary(_json_data_base64, 'base64')"),
            "_ce_datacontenttype": _binary_attribute("datacontenttype"),
        }
    )

    binary = ~F.col("_structured")
    structured_json = F.col("_json_format")
    reason_checks: list[tuple[Column, RejectReason, Column]] = [
        (
            binary & F.col("value").isNull() & (F.size("_ce_names") == 0),
            RejectReason.PLAIN_TOMBSTONE,
            F.lit(
                "record has no value and no ce_ headers: a plain Kafka tombstone, not a CloudEvent"
            ),
        ),
        (
            F.col("_structured") & F.col("_media_type").startswith(BATCH_MEDIA_PREFIX),
            RejectReason.UNSUPPORTED_BATCH_MODE,
            F.concat(
                F.lit("the Kafka binding has no batch mode; content-type: "), F.col("_content_type")
            ),
        ),
        (
            F.col("_structured") & ~structured_json,
            RejectReason.UNSUPPORTED_EVENT_FORMAT,
            F.concat(
                F.lit("structured event format not decodable here (only JSON); content-type: "),
                F.col("_content_type"),
            ),
        ),
        (
            binary & F.col("_bad_encoding"),
            RejectReason.INVALID_HEADER_ENCODING,
            F.lit("a ce_ or content-type header has no value or is not valid UTF-8"),
        ),
        (
            # Two content-type headers leave the content mode itself undecided: any mode.
            (binary & (F.size("_duplicate_names") > 0)) | (F.col("_ct_count") > 1),
            RejectReason.DUPLICATE_HEADER,
            F.concat(
                F.lit("header repeated: "),
                F.array_join(
                    F.concat(
                        F.transform("_duplicate_names", lambda n: F.concat(F.lit(CE_PREFIX), n)),
                        F.when(
                            F.col("_ct_count") > 1, F.array(F.lit(CONTENT_TYPE_HEADER))
                        ).otherwise(F.array().cast("array<string>")),
                    ),
                    ", ",
                ),
            ),
        ),
        (
            structured_json & F.col("value").isNull(),
            RejectReason.MALFORMED_JSON,
            F.lit("structured record with no value"),
        ),
        (
            structured_json & ~F.col("_value_utf8"),
            RejectReason.MALFORMED_JSON,
            F.lit("structured JSON value is not valid UTF-8"),
        ),
        (
            structured_json
            & (
                ~F.col("_json_parsed")
                | ~(F.col("_single_by_parse") | _single_value_by_scan(value_text))
            ),
            RejectReason.MALFORMED_JSON,
            F.lit("value is not parseable JSON (syntax, duplicate member, or nesting too deep)"),
        ),
        (
            structured_json & F.col("_members").isNull(),
            RejectReason.MALFORMED_JSON,
            F.lit("JSON value is not an object"),
        ),
        (
            binary & (F.size("_bad_binary_names") > 0),
            RejectReason.INVALID_ATTRIBUTE_NAME,
            F.concat(
                F.lit(
                    "attribute names must be lowercase letters and digits (data is not a header): "
                ),
                F.array_join(
                    F.transform("_bad_binary_names", lambda n: F.concat(F.lit(CE_PREFIX), n)), ", "
                ),
            ),
        ),
        (
            structured_json & (F.size("_bad_json_names") > 0),
            RejectReason.INVALID_ATTRIBUTE_NAME,
            F.concat(
                F.lit("attribute names must be lowercase letters and digits: "),
                F.array_join("_bad_json_names", ", "),
            ),
        ),
        (
            structured_json & (F.size("_bad_json_types") > 0),
            RejectReason.INVALID_ATTRIBUTE_TYPE,
            F.concat(
                F.lit("attribute values must be strings (extensions: string, number or boolean): "),
                F.array_join("_bad_json_types", ", "),
            ),
        ),
        (
            binary & (F.size("_ce_names") == 0),
            RejectReason.NOT_A_CLOUDEVENT,
            F.lit("no ce_ headers and no CloudEvents content-type"),
        ),
        (
            F.size("_missing") > 0,
            RejectReason.MISSING_REQUIRED_ATTRIBUTE,
            F.concat(F.lit("missing required attribute(s): "), F.array_join("_missing", ", ")),
        ),
        (
            F.size("_empty") > 0,
            RejectReason.EMPTY_REQUIRED_ATTRIBUTE,
            F.concat(F.lit("empty required attribute(s): "), F.array_join("_empty", ", ")),
        ),
        (
            F.col("_a_specversion") != SPEC_VERSION,
            RejectReason.UNSUPPORTED_SPECVERSION,
            F.concat(F.lit(f"specversion must be {SPEC_VERSION}, got "), F.col("_a_specversion")),
        ),
        (
            F.col("_a_time").isNotNull()
            & (
                ~F.col("_a_time").rlike(jvm_full_match(RFC3339_PATTERN))
                | F.col("_time").isNull()
                # Year 0000 is RFC 3339 but outside what Spark and Python can represent.
                | F.col("_a_time").startswith("0000")
            ),
            RejectReason.INVALID_TIME,
            F.concat(F.lit("time is not an RFC 3339 timestamp: "), F.col("_a_time")),
        ),
        (
            # Valid RFC 3339 whose offset moves it out of years 0001-9999 in UTC.
            ~F.unix_micros("_time").between(MIN_TIME_MICROS, MAX_TIME_MICROS),
            RejectReason.INVALID_TIME,
            F.concat(
                F.lit("time is outside years 0001-9999 in UTC: "), F.substring("_a_time", 1, 100)
            ),
        ),
        (
            structured_json & F.col("_json_has_data") & F.col("_json_data_base64").isNotNull(),
            RejectReason.DATA_AND_DATA_BASE64,
            F.lit("the JSON event has both data and data_base64"),
        ),
        (
            structured_json
            & F.col("_json_data_base64").isNotNull()
            & F.col("_data_base64_bytes").isNull(),
            RejectReason.INVALID_DATA_BASE64,
            F.lit("data_base64 is not valid base64"),
        ),
        (
            binary
            & F.col("_content_type").isNotNull()
            & F.col("_ce_datacontenttype").isNotNull()
            & (F.col("_content_type") != F.col("_ce_datacontenttype")),
            RejectReason.CONFLICTING_DATACONTENTTYPE,
            F.lit("content-type and ce_datacontenttype headers disagree"),
        ),
    ]
    # One CASE gives reason and detail together: two would run every check twice.
    reject: Column = F.lit(None).cast("struct<reason:string,detail:string>")
    for condition, code, text in reversed(reason_checks):
        found = F.struct(F.lit(code.value).alias("reason"), text.cast("string").alias("detail"))
        reject = F.when(condition, found).otherwise(reject)
    staged = staged.withColumn("_reject", reject)

    # Data: binary mode carries it as the value; the JSON format as data or data_base64.
    json_data = F.col("_attrs.data")
    json_data_bytes = (
        F.when(F.col("_data_base64_bytes").isNotNull(), F.col("_data_base64_bytes"))
        .when(~F.col("_json_has_data"), F.lit(None).cast("binary"))
        # JSON data is stored as JSON whatever its type: asked first, so that the type of
        # (often large, nested) data is only looked at for other media types.
        .when(_is_json_media_type(F.col("_a_datacontenttype")), F.to_json(json_data).cast("binary"))
        .when(
            F.expr("schema_of_variant(_attrs.data)") == "STRING",
            # Text from a JSON parse is valid UTF-8 already: a cast, not encode(), which
            # checks every byte again.
            F.expr("variant_get(_attrs.data, '$', 'string')").cast("binary"),
        )
        .otherwise(F.to_json(json_data).cast("binary"))
    )
    binary_extensions = F.expr(
        "CASE WHEN size(_duplicate_names) = 0 THEN map_filter(map_from_arrays(_ce_names, "
        "_ce_values), "
        f"(k, v) -> k NOT IN ({_sql_list(CONTEXT_ATTRIBUTES)})) END"
    )
    json_extensions = F.expr(
        "transform_values(map_filter(_members, (k, v) -> "
        f"k NOT IN ({known_members}) AND NOT is_variant_null(v)), "
        "(k, v) -> CASE WHEN schema_of_variant(v) = 'STRING' "
        "THEN variant_get(v, '$', 'string') ELSE to_json(v) END)"
    )

    return staged.select(
        *[F.col(f"_a_{name}").alias(name) for name in CONTEXT_ATTRIBUTES if name != "time"],
        F.col("_time").alias("time"),
        F.when(F.col("_structured"), json_data_bytes).otherwise(F.col("value")).alias("data"),
        F.when(F.col("_structured"), json_extensions)
        .otherwise(binary_extensions)
        .alias("extensions"),
        F.col("content_mode"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").alias("kafka_key"),
        F.col("value").alias("kafka_value"),
        F.col("headers").alias("kafka_headers"),
        F.col("_reject.reason").alias("reject_reason"),
        F.substring("_reject.detail", 1, DETAIL_MAX_CHARS).alias("reject_detail"),
        F.current_timestamp().alias("ingested_at"),
    )


def to_events(decoded: DataFrame) -> DataFrame:
    """Rows of :func:`decode_records` that are valid CloudEvents, in events-table shape."""
    return decoded.where(F.col("reject_reason").isNull()).select(*EVENT_COLUMNS)


def to_rejects(decoded: DataFrame, rejected_by: str = INGEST_JOB) -> DataFrame:
    """Rows of :func:`decode_records` that are not valid CloudEvents, in rejects-table shape.

    ``rejected_by`` names the job that read the record: ingest and republish may both
    read (and reject) one record, and each of their reads must be accounted for once.

    Example:
        >>> to_rejects(decoded, "republish:orders").select("rejected_by").first()[0]
        'republish:orders'
    """
    renamed = {"reason": "reject_reason", "detail": "reject_detail"}
    return decoded.where(F.col("reject_reason").isNotNull()).select(
        *[
            F.lit(rejected_by).alias(c)
            if c == "rejected_by"
            else F.col(renamed[c]).alias(c)
            if c in renamed
            else F.col(c)
            for c in REJECT_COLUMNS
        ]
    )
