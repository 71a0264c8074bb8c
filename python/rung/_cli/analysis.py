"""`python3 -m rung importance` (cli/analysis.c): which parameters matter,
per metric a table of the parameters in the API's order, most important
first (docs/api.md, "GET /api/v1/experiments/{id}/importance")."""

from __future__ import annotations

import argparse

from ..client import Client
from .commands import EXIT_OK, print_json
from .fmt import clean
from .table import table


def _print_metric(m: dict) -> None:
    mode = m.get("mode")
    print(f"{clean(m.get('name', '?'))} ({m.get('kind', '?')}"
          + (f", {mode}" if mode else "") + f", {m.get('trials', 0)} trials)")
    rows = m.get("importance") or []
    if not rows:
        print("  " + clean(m.get("reason", "no importance")))
        return
    print(table(["PARAM", "IMPORTANCE", "STD", "TRIALS"],
                [[clean(p.get("param", "?")), f"{p.get('importance', 0.0):.3f}",
                  f"{p.get('std', 0.0):.3f}", str(p.get("trials", ""))] for p in rows],
                right=(1, 2, 3)))


def cmd_importance(client: Client, args: argparse.Namespace) -> int:
    r = client.importance(args.id, metric=args.metric)
    if args.json:
        print_json(r)
        return EXIT_OK
    for i, m in enumerate(r.get("metrics", [])):
        if i > 0:
            print()
        _print_metric(m)
    return EXIT_OK
