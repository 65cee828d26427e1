"""eventlake.ledger.offset_ranges and the ledger's pure parts: offsets asked for, Spark's JSON, the
position of a run over several tables."""

from __future__ import annotations

import json

import pytest

from eventlake.core.offset_specs import offsets_problem, run_offsets_problem
from eventlake.ledger.marks import caught_up_key, ledger_key, position
from eventlake.ledger.offset_ranges import (
    offsets_json,
    requested_starts,
    split_range,
    starting_offsets_json,
)


def test_earliest_and_latest_become_spark_numbers_for_every_partition() -> None:
    assert requested_starts("earliest", {"a": 2}) == {("a", 0): -2, ("a", 1): -2}
    assert requested_starts("latest", {"a": 1}) == {("a", 0): -1}


def test_json_starting_offsets_fill_unnamed_partitions_with_earliest() -> None:
    assert requested_starts('{"a": {"1": 5}}', {"a": 2}) == {("a", 0): -2, ("a", 1): 5}


def test_starting_offsets_take_the_mark_where_there_is_one() -> None:
    text = starting_offsets_json({("a", 0): 12}, {"a": 2}, {("a", 0): -2, ("a", 1): -1})

    assert json.loads(text) == {"a": {"0": 12, "1": -1}}


def test_offsets_json_nests_by_topic_then_partition() -> None:
    assert json.loads(offsets_json({("b", 1): 3, ("a", 0): 1})) == {"a": {"0": 1}, "b": {"1": 3}}


def test_a_run_over_two_tables_stands_at_the_lower_mark() -> None:
    assert position({("a", 0): 9, ("a", 1): 4}, {("a", 0): 5, ("a", 1): 6}) == {
        ("a", 0): 5,
        ("a", 1): 4,
    }


def test_ledger_keys_name_job_topic_and_partition() -> None:
    assert ledger_key("ingest", "orders", 3) == "eventlake/ingest/orders/3"
    assert caught_up_key("customers") == "eventlake/state-caught-up/customers"


def test_a_range_is_cut_into_pieces_of_about_so_many_offsets_that_cover_it() -> None:
    starts = {("a", 0): 0, ("a", 1): 10, ("b", 0): 7}
    ends = {("a", 0): 9, ("a", 1): 12, ("b", 0): 7}

    pieces = split_range(starts, ends, 4)

    assert pieces[0][0] == starts and pieces[-1][1] == ends
    assert all(pieces[i][1] == pieces[i + 1][0] for i in range(len(pieces) - 1))
    sizes = [sum(end[k] - start[k] for k in ends) for start, end in pieces]
    assert sum(sizes) == 11 and max(sizes) <= 4 and len(pieces) == 3


def test_a_range_within_the_bound_is_one_piece() -> None:
    assert split_range({("a", 0): 3}, {("a", 0): 5}, 10) == [({("a", 0): 3}, {("a", 0): 5})]


@pytest.mark.parametrize(
    "spec", ["earliest", "latest", '{"a": {"0": 42, "1": -1, "2": -2}}', '{"a.b-c": {"10": 0}}']
)
def test_starting_offsets_spark_takes_are_taken(spec: str) -> None:
    assert offsets_problem("--starting-offsets", spec) is None


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("erliest", "not JSON"),
        ("[]", "not a JSON object of topics"),
        ("{}", "not a JSON object of topics"),
        ('{"a": 5}', "topic 'a' has no object of partitions"),
        ('{"a": {"x": 5}}', "partition 'x' of 'a' is not a number"),
        ('{"a": {"0": "5"}}', "'5', for partition 0 of 'a', is not an offset"),
        ('{"a": {"0": true}}', "True, for partition 0 of 'a', is not an offset"),
        ('{"a": {"0": -3}}', "-3, for partition 0 of 'a', is not an offset"),
    ],
)
def test_starting_offsets_spark_refuses_are_refused_with_why(spec: str, why: str) -> None:
    problem = offsets_problem("--starting-offsets", spec)

    assert problem is not None
    assert problem.startswith(f"--starting-offsets {spec!r} is not 'earliest', 'latest' or")
    assert problem.endswith(f": {why}.")


def test_ending_offsets_take_neither_earliest_nor_minus_two() -> None:
    assert run_offsets_problem("earliest", '{"a": {"0": 7, "1": -1}}') is None
    for ending in ("earliest", '{"a": {"0": -2}}'):
        assert str(run_offsets_problem("earliest", ending)).startswith("--ending-offsets")
