"""`python3 -m rung`: the command line client in Python.

The main verbs of the C client `rung` (docs/api.md, "Command lines"), with
the same names, arguments and exit statuses, through rung.Client:

    python3 -m rung [--server URL] [--token T] COMMAND [ARGS]

`submit` also reads YAML specs (.yaml, .yml) and, with `--wandb`, W&B sweep
files (rung.convert); `best` prints an experiment's best trial by either
scope. Exit status 0 done, 1 the request failed (the daemon's error on
stderr: `rung: CODE: MESSAGE (field F)`, as the C client) or rungd could not be reached, 2 bad
arguments. Strings from the daemon are stripped of control characters
before they reach the terminal.

This module is the entry point only; the commands live in rung._cli, one
module per file of the C client (rung/_cli/__init__.py lists them).
"""

from __future__ import annotations

from ._cli.main import build_parser, main

__all__ = ["main", "build_parser"]
