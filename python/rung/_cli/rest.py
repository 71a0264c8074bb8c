"""The daemon's errors as `python3 -m rung` reports them (cli/rest.c,
cli_error_print and cli_error_transient). The requests themselves go
through rung.client.
"""

from __future__ import annotations

import sys

from ..client import ApiError, UnreachableError
from .fmt import clean


def transient(err: Exception) -> bool:
    """rungd restarting or behind a proxy that is: worth asking again."""
    return isinstance(err, UnreachableError) or (
        isinstance(err, ApiError) and err.status in (502, 503, 504))


def print_api_error(err: ApiError) -> None:
    """The same line as the C client's: `rung: CODE: MESSAGE (field F)`,
    and a hint when the daemon wants a token."""
    text = f"{err.code}: {err.message}"
    if err.field:
        text += f" (field {err.field})"
    print(f"rung: {clean(text)}", file=sys.stderr)
    if err.status == 401:
        print("rung: hint: pass --token T or set RUNG_TOKEN to the daemon's token",
              file=sys.stderr)
