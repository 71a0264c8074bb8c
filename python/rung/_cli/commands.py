"""What every command of `python3 -m rung` shares (cli/commands.h): the
exit statuses, the local errors, the argument types and the JSON printout.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TRIAL_FAILED = 3  # the trial logs --follow followed ended failed or canceled


class CliError(Exception):
    """A local failure (a file that cannot be read, a spec that is not one):
    printed as `rung: MESSAGE`, exit status 1."""


class UsageError(Exception):
    """A usage error found after parsing (exit status 2)."""


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be from 0.1 to 3600 seconds, got {text!r}")
    return value
