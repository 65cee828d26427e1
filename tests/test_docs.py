"""The README and docs/: every relative link leads to a file that exists, and to a
heading of it when it names one (as GitHub makes anchors of headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eventlake.core.settings import PROJECT_ROOT

DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped, spaces as dashes.

    Example:
        >>> anchor("`state/<topic>`: latest event")
        'statetopic-latest-event'
    """
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(document: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", document.read_text(encoding="utf-8"), flags=re.S)
    return {anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def test_anchor_is_githubs() -> None:
    assert anchor(" `rejects`: every record (Kafka)") == "rejects-every-record-kafka"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(document: Path) -> None:
    for target in _LINK.findall(document.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked here
        path, _, fragment = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        assert linked.exists(), f"{document.name}: {target} does not exist"
        if fragment:
            assert fragment in _anchors(linked), f"{document.name}: no heading #{fragment}"


def test_readme_lists_the_commands_that_stop_cleanly() -> None:
    from eventlake.cli import COMMAND_ORDER, STOPPABLE_COMMANDS

    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| a job stops cleanly"))
    named = set(re.findall(r"[a-z][a-z-]*", row.split("|")[2]))
    # ingest and republish are named by what they run: streams, backfills, full refreshes.
    assert named & set(COMMAND_ORDER) == STOPPABLE_COMMANDS - {"ingest", "republish"}


#: A dotted name of eventlake's code in prose: ``eventlake.<package or module>...``.
_DOTTED = re.compile(r"(?<![\w./-])eventlake(?:\.[A-Za-z_]\w*)+")


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module of eventlake or an attribute of one."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_module_the_docs_name_exists(document: Path) -> None:
    import pkgutil

    import eventlake

    top = {info.name for info in pkgutil.iter_modules(eventlake.__path__)}
    names = {
        name.rstrip(".")
        for name in _DOTTED.findall(document.read_text(encoding="utf-8"))
        if name.split(".")[1] in top  # not an asset name such as eventlake.events
    }
    missing = sorted(name for name in names if not _resolves(name))
    assert missing == [], f"{document.name} names code that is not there: {missing}"
