"""Where a warehouse, a table or a file of it is: a :class:`Location`, a local path or an
object-store URI (``s3a://bucket/prefix``) behind one type. A value, no I/O: opening,
listing and writing are :mod:`eventlake.storage.store`'s.

``pathlib.Path`` cannot be that type: it folds ``s3a://b/p`` into ``s3a:/b/p``. A
Location joins parts with ``/`` as a path does, names its last part and its parent,
prints as the path (local) or the URI (object store), and is a path-like object only
when it is local, so a local-only call on an object-store location fails at once.

Example:
    >>> events = Location.of("s3a://lake/prod") / "events"
    >>> str(events), events.name, str(events.parent), events.is_local
    ('s3a://lake/prod/events', 'events', 's3a://lake/prod', False)
    >>> str(Location.of("/srv/warehouse") / "state" / "orders")
    '/srv/warehouse/state/orders'
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Annotated, Final
from urllib.parse import urlparse

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

#: What a location is given as: its text, a local path, or a location.
LocationLike = str | os.PathLike[str]

#: Schemes that name the local file system.
LOCAL_SCHEMES: Final = frozenset({"", "file"})


class Location(os.PathLike[str]):
    """A local path or an object-store URI; immutable, compared by its text.

    Example:
        >>> Location.of("file:///srv/wh") == Location.of("/srv/wh")
        True
    """

    __slots__ = ("_path", "_scheme")

    def __init__(self, scheme: str, path: str) -> None:
        self._scheme = scheme
        # An object store's path is "bucket/key..." without a leading slash.
        self._path = path.strip("/") if scheme else (path.rstrip("/") or "/")

    @classmethod
    def of(cls, where: LocationLike | Location) -> Location:
        """``where`` as a location: ``file:`` URIs and plain paths are local.

        Example:
            >>> Location.of(Path("wh")).is_local
            True
        """
        if isinstance(where, Location):
            return where
        text = os.fspath(where)
        scheme = urlparse(text).scheme.lower() if "://" in text else ""
        if scheme == "file":
            return cls("", urlparse(text).path)
        if scheme:
            parsed = urlparse(text)
            return cls(scheme, f"{parsed.netloc}{parsed.path}")
        return cls("", text)

    @property
    def scheme(self) -> str:
        """``""`` for a local path, else the URI's scheme (``s3a``)."""
        return self._scheme

    @property
    def is_local(self) -> bool:
        return self._scheme in LOCAL_SCHEMES

    @property
    def name(self) -> str:
        """The last part: ``events`` of ``.../warehouse/events``."""
        return posixpath.basename(self._path)

    @property
    def parent(self) -> Location:
        """The location one part up."""
        return Location(self._scheme, posixpath.dirname(self._path))

    def __truediv__(self, part: str) -> Location:
        return Location(
            self._scheme, posixpath.join(self._path, part.strip("/") if self._scheme else part)
        )

    def with_name(self, name: str) -> Location:
        """The sibling called ``name``."""
        return self.parent / name

    def absolute(self) -> Location:
        """A local location made absolute (an object store's always is)."""
        return Location("", os.path.abspath(self._path)) if self.is_local else self

    def as_uri(self) -> str:
        """The location as a URI: ``file:///...`` (absolute, links resolved) or
        ``s3a://...``."""
        return Path(self._path).resolve().as_uri() if self.is_local else str(self)

    def local(self) -> Path:
        """The local path; a location on an object store raises (say what to use).

        Example:
            >>> Location.of("/srv/wh").local()
            PosixPath('/srv/wh')
        """
        if not self.is_local:
            raise TypeError(f"{self} is on {self._scheme!r} storage, not a local path")
        return Path(self._path)

    def __fspath__(self) -> str:
        return str(self.local())

    def __str__(self) -> str:
        return self._path if self.is_local else f"{self._scheme}://{self._path}"

    def __repr__(self) -> str:
        return f"Location({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        # A local location equals the same path given as a Path (tests, callers' folders).
        if isinstance(other, os.PathLike) and not isinstance(other, Location):
            other = Location.of(other)
        if isinstance(other, Location):
            return (self._scheme, self._path) == (other._scheme, other._path)
        return NotImplemented

    def __hash__(self) -> int:
        # As a Path of the same local path hashes: the two are equal.
        return hash(Path(self._path)) if self.is_local else hash((self._scheme, self._path))


#: A setting that is a place: a local folder or an object-store URI (s3a://bucket/prefix),
#: read from a string, written back as one.
LocationSetting = Annotated[
    Location,
    BeforeValidator(Location.of),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string"}),
]
