"""Trino's server, fetched and unpacked for the local Trino (``make trino``).

The archive (``settings.trino_server_url``, 821 MB for 476) is downloaded once into
``downloads/`` beside ``settings.trino_server_dir`` and checked against the ``.sha1``
Maven Central publishes beside it; only what a Delta Lake catalog needs is unpacked
(``lib/``, ``bin/``, ``plugin/delta-lake``: 380 MB instead of 2.6 GB, and no other
plugin for the server to load at start). The archive stores the jars that several
plugins share once, as hard links to the first plugin's copy: a link whose target is
not unpacked gets the target's bytes. Nothing is done when the folder already holds
the same URL's server.

Example:
    $ python -m eventlake.local.trino_install
    trino: unpacked .../var/trino-server (lib, bin, plugin/delta-lake)
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Final

from eventlake.local.settings import LocalSettings, load_local_settings
from eventlake.local.trino import TrinoError

#: What is unpacked, relative to the archive's top folder.
KEPT: Final = ("lib/", "bin/", "plugin/delta-lake/", "NOTICE")
#: The stamp in the unpacked folder: the URL it came from.
STAMP: Final = ".unpacked-from"


def _inside(name: str) -> str:
    """A member's path below the archive's top folder (``trino-server-476/``)."""
    return name.split("/", 1)[1] if "/" in name else ""


def _kept(relative: str) -> bool:
    return relative.startswith(KEPT)


def download(url: str, target: Path) -> Path:
    """``url`` saved as ``target`` (kept: a second call does nothing), checked against
    the ``<url>.sha1`` beside it."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    digest = hashlib.sha1()  # Maven Central publishes a .sha1 beside each file
    try:
        with urllib.request.urlopen(url, timeout=60) as answer, open(partial, "wb") as out:
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        with urllib.request.urlopen(url + ".sha1", timeout=60) as answer:
            expected = answer.read().decode().split()[0].strip()
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise TrinoError(f"Could not download {url}: {error}") from error
    if digest.hexdigest() != expected:
        partial.unlink(missing_ok=True)
        raise TrinoError(f"{url} does not match its .sha1 ({expected}): download it again.")
    partial.rename(target)
    return target


def unpack(archive: Path, folder: Path) -> None:
    """The kept part of Trino's server ``archive`` in ``folder`` (replaced whole)."""
    staging = folder.with_name(folder.name + ".unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    # First pass: the kept hard links whose targets are not kept themselves.
    borrowed: dict[str, list[str]] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            relative = _inside(member.name)
            if _kept(relative) and member.islnk() and not _kept(_inside(member.linkname)):
                borrowed.setdefault(member.linkname, []).append(relative)
    with tarfile.open(archive, "r|gz") as tar:
        for member in tar:
            relative = _inside(member.name)
            copies = borrowed.get(member.name, []) if member.isfile() else []
            if _kept(relative) and member.isfile():
                copies = [relative, *copies]
            if copies:
                _write(tar, member, [staging / copy for copy in copies])
            if _kept(relative) and member.isdir():
                (staging / relative).mkdir(parents=True, exist_ok=True)
            elif _kept(relative) and member.islnk() and _kept(_inside(member.linkname)):
                (staging / relative).parent.mkdir(parents=True, exist_ok=True)
                (staging / relative).hardlink_to(staging / _inside(member.linkname))
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, paths: list[Path]) -> None:
    """The streamed ``member``'s bytes (readable once) into each of ``paths``."""
    source = tar.extractfile(member)
    if source is None:
        raise TrinoError(f"{member.name} in Trino's archive has no content.")
    with source:
        data = source.read()
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(member.mode & 0o755)


def install(settings: LocalSettings) -> Path:
    """Trino's server unpacked in ``settings.trino_server_dir`` (nothing done when it is
    there already, from the same URL); the folder."""
    folder = settings.trino_server_dir
    url = settings.trino_server_url
    stamp = folder / STAMP
    if stamp.exists() and stamp.read_text().strip() == url:
        return folder
    archive = download(url, folder.parent / "downloads" / url.rsplit("/", 1)[-1])
    unpack(archive, folder)
    stamp.write_text(url + "\n")
    return folder


def main() -> int:
    settings = load_local_settings()
    stamp = settings.trino_server_dir / STAMP
    current = stamp.exists() and stamp.read_text().strip() == settings.trino_server_url
    try:
        folder = install(settings)
    except TrinoError as error:
        print(f"trino: {error}", file=sys.stderr)
        return 1
    said = "current" if current else "unpacked"
    print(f"trino: {said} {folder} (lib, bin, plugin/delta-lake)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
