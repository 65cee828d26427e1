"""JSON text that is exactly one JSON value, decided with Spark expressions: what the
sender side (:mod:`eventlake.republish.encode`) needs to copy JSON data verbatim between
content modes. (The receiver's JSON parsing is the JVM decoder's, see
:mod:`eventlake.binding`.)

Example:
    >>> df.where(single_json_value(F.col("text")))
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column
from pyspark.sql import functions as F

JSON_WHITESPACE: Final = "[ \\t\\n\\r]"
#: One JSON string token; possessive quantifiers so that long strings cannot backtrack.
_JSON_STRING: Final = '"(?:[^"\\\\]++|\\\\.)*+"'
_JSON_SCALAR: Final = '^(-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?|""|true|false|null)$'


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
