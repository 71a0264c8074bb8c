"""Text tables for `python3 -m rung` (cli/table.c)."""

from __future__ import annotations

from typing import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]],
          right: Sequence[int] = ()) -> str:
    """A plain table: columns two spaces apart, no trailing blanks;
    `right` lists the columns aligned to the right. A cell may hold several
    lines ("\\n"), as a worker's GPUs do, one each: its row grows to fit."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max([widths[i]] + [len(part) for part in cell.split("\n")])
    lines = []
    for row in [list(headers)] + [list(r) for r in rows]:
        parts = [cell.split("\n") for cell in row]
        for k in range(max(len(p) for p in parts)):
            cells = [(p[k] if k < len(p) else "") for p in parts]
            cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                     for i, cell in enumerate(cells)]
            lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
