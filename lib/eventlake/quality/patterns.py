"""Patterns of CloudEvents attribute values: URI reference, absolute URI, media type.

They run in Java (``rlike``, and GX's regex expectation on Spark), so they end in
``\\z``, not ``$``, which would also match before a trailing line break ("/shop\\n");
the binding matches whole values for the same reason.

Example:
    >>> frame = spark.createDataFrame([("urn:example:s",), ("s.json",)], "v string")
    >>> [r[0] for r in frame.select(F.col("v").rlike(ABSOLUTE_URI_PATTERN)).collect()]
    [True, False]
"""

from __future__ import annotations

from typing import Final

#: RFC 3986 URI-reference: a URI with a scheme, or a relative reference whose first
#: segment has no colon; only allowed characters and well-formed percent-escapes.
URI_REFERENCE_PATTERN: Final = (
    r"^(?:[A-Za-z][A-Za-z0-9+.\-]*:|(?![^/?#]*:))"
    r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]]|%[0-9A-Fa-f]{2})*\z"
)
#: RFC 3986 section 4.3 absolute-URI: scheme, no fragment.
ABSOLUTE_URI_PATTERN: Final = (
    r"^[A-Za-z][A-Za-z0-9+.\-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]|%[0-9A-Fa-f]{2})+\z"
)
_MEDIA_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+\-]{0,126}"
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z\-]+"
#: RFC 2046 / 6838 media type: type/subtype, then parameters (token or quoted-string values).
MEDIA_TYPE_PATTERN: Final = (
    rf"^{_MEDIA_NAME}/{_MEDIA_NAME}"
    rf"(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|\"(?:[^\"\\]|\\.)*\"))*[ \t]*\z"
)
