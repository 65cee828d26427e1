"""eventlake.core.text_table: aligned plain-text tables."""

from __future__ import annotations

from eventlake.core.text_table import text_table


def test_columns_are_padded_to_their_widest_cell() -> None:
    lines = text_table(["topic", "lag"], [["orders", "0"], ["payments", "12"]])
    assert lines == [
        "topic    | lag",
        "---------+----",
        "orders   | 0  ",
        "payments | 12 ",
    ]


def test_a_table_without_rows_is_its_header_and_rule() -> None:
    assert text_table(["a", "bb"], []) == ["a | bb", "--+---"]
