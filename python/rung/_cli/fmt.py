"""How `python3 -m rung` writes values for a person (cli/fmt.c): a JSON
value in a cell, a daemon's string made safe for a terminal, cuts, counts.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
_CONTROL_LINE_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\x80-\x9f]")

NAME_WIDTH = 32  # the longest name `ls` and `workers` show before cutting it
TAGS_WIDTH = 32  # `ls`'s TAGS column, cut beyond

# The states a trial ends in: it never changes again.
TRIAL_OVER = ("completed", "stopped", "failed", "canceled")


def clean(text: Any, keep_newlines: bool = False) -> str:
    """A daemon's string made safe for a terminal: control characters (and
    tabs and newlines, unless `keep_newlines`) become spaces or go."""
    text = "" if text is None else str(text)
    if keep_newlines:
        return _CONTROL_RE.sub("", text.replace("\r\n", "\n"))
    return _CONTROL_LINE_RE.sub(" ", text.replace("\r", "").replace("\n", " "))


def join_tags(tags: Any) -> str:
    """Tags in one line, "a,b" ("-" for none): tags hold no comma."""
    return ",".join(clean(t) for t in tags) if isinstance(tags, list) and tags else "-"


def fmt(value: Any) -> str:
    """A JSON value in a table cell: numbers briefly, strings as they are."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value):
            return f"{value:.6g}"
        return str(value)
    if isinstance(value, (int, str)):
        return clean(value)
    return clean(json.dumps(value, separators=(",", ":")))


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def done(counts: dict) -> int:
    """Trials that ended, whichever way (cli_fmt_done)."""
    return sum((counts or {}).get(s, 0) for s in TRIAL_OVER)
