"""eventlake.ledger.checkpoint: one stream per checkpoint, held by a live process only."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eventlake.ledger.checkpoint import (
    DEFAULT_NAME_LIMIT,
    CheckpointBusyError,
    check_checkpoint_name,
    checkpoint_holder,
    default_checkpoint_name,
    hold_checkpoint,
    route_checkpoint_name,
)

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from eventlake.ledger.checkpoint import hold_checkpoint
    with hold_checkpoint(Path(sys.argv[1]), job="ingest"):
        print("holding", flush=True)
        time.sleep(120)
    """
)


def _holder(checkpoint: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(checkpoint)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_checkpoint_held_by_another_process_is_refused_naming_it(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ingest-topics_orders"
    process = _holder(checkpoint)
    try:
        busy = pytest.raises(CheckpointBusyError, match=rf"ingest \(pid {process.pid} on ")
        with busy, hold_checkpoint(checkpoint, job="ingest"):
            pass
        holder = checkpoint_holder(checkpoint)
        assert holder is not None and holder["pid"] == process.pid
    finally:
        process.kill()
        process.wait()


def test_the_lock_of_a_killed_holder_is_free(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ingest-topics_orders"
    process = _holder(checkpoint)
    process.kill()
    process.wait()

    assert checkpoint_holder(checkpoint) is None
    with hold_checkpoint(checkpoint, job="republish"):
        holder = checkpoint_holder(checkpoint)
        assert holder is not None and (holder["pid"], holder["job"]) == (os.getpid(), "republish")


@pytest.mark.parametrize("name", ["../x", "/tmp/x", "a/b", "..", ".", "", "x" * 256])
def test_a_checkpoint_name_that_is_not_a_folder_name_is_refused(name: str) -> None:
    from eventlake.ingest import IngestError, IngestRequest

    with pytest.raises(IngestError, match="--checkpoint-name: Checkpoint name"):
        IngestRequest(topics=("t",), checkpoint_name=name)


def test_a_republish_checkpoint_name_with_a_path_is_refused() -> None:
    from eventlake.republish import RepublishError, RepublishRequest

    with pytest.raises(RepublishError, match="--checkpoint-name"):
        RepublishRequest(source="a", target="b", checkpoint_name="../outside")


def test_a_crash_while_claiming_leaves_no_half_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eventlake.ledger.checkpoint import IDENTITY_FILE, claim_checkpoint

    def crash(*_: object) -> None:
        raise OSError("killed mid-write")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="killed mid-write"):
        claim_checkpoint(tmp_path / "c", source="topics:a", targets=["/wh/events"])

    assert not (tmp_path / "c" / IDENTITY_FILE).exists()


def test_two_topic_sets_alike_in_their_first_characters_get_checkpoints_of_their_own() -> None:
    # The ingest DAG's run of the topics due: one run all ten, the next nine of them.
    topics = [f"warehouse.events.topic-{n:02d}" for n in range(10)]
    ten = default_checkpoint_name("ingest", "topics:" + ",".join(topics))
    nine = default_checkpoint_name("ingest", "topics:" + ",".join(topics[:9]))

    assert ten != nine
    assert len(ten) == len(nine) == DEFAULT_NAME_LIMIT
    assert ten.startswith("ingest-topics_warehouse.events.topic-00_warehouse.events.topic-01")
    assert check_checkpoint_name(ten) == ten


@pytest.mark.parametrize(
    ("one", "other"),
    [("topics:a,b", "topics:a_b"), ("pattern:a.*", "pattern:a.+")],
    ids=["several topics and one", "two patterns"],
)
def test_sources_whose_folder_names_would_be_one_get_checkpoints_of_their_own(
    one: str, other: str
) -> None:
    assert default_checkpoint_name("ingest", one) != default_checkpoint_name("ingest", other)


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("topics:demo.orders", "ingest-topics_demo.orders"),
        ("pattern:clicks", "ingest-pattern_clicks"),
    ],
)
def test_one_topic_or_a_pattern_of_folder_characters_keeps_its_name(source: str, name: str) -> None:
    # The checkpoints of earlier versions: a stream goes on where its checkpoint is.
    assert default_checkpoint_name("ingest", source) == name


def test_two_routes_whose_names_join_alike_get_checkpoints_of_their_own() -> None:
    # "a-b" to "c" and "a" to "b-c" both read republish-a-b-c.
    assert route_checkpoint_name("a-b", "c") != route_checkpoint_name("a", "b-c")


def test_a_route_between_long_topic_names_gets_a_checkpoint_name_within_the_limit() -> None:
    # Kafka allows 249 characters per topic: joined, two names pass a folder name's 255.
    source, target = "s" * 249, "t" * 249
    name = route_checkpoint_name(source, target)

    assert len(name) == DEFAULT_NAME_LIMIT
    assert check_checkpoint_name(name) == name
    assert name != route_checkpoint_name(source, "t" * 248)


def test_a_route_from_a_source_without_a_dash_keeps_its_name() -> None:
    # The checkpoints of earlier versions: a stream goes on where its checkpoint is.
    assert route_checkpoint_name("demo.orders", "orders-by-key") == (
        "republish-demo.orders-orders-by-key"
    )
