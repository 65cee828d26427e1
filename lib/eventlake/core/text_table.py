"""Aligned plain-text tables for the command line (query results, check reports, status).

Example:
    >>> print("\\n".join(text_table(["topic", "lag"], [["orders", "0"], ["payments", "12"]])))
    topic    | lag
    ---------+----
    orders   | 0
    payments | 12
"""

from __future__ import annotations

from collections.abc import Sequence


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header, a rule and one line per row, columns padded to their widest cell."""
    widths = [max([len(name)] + [len(row[i]) for row in rows]) for i, name in enumerate(header)]
    lines = [" | ".join(name.ljust(w) for name, w in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [
        " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows
    ]
    return lines
