"""`python3 -m rung watch ID` (cli/watch.c): an experiment followed until
it ends, through rung.Experiment.wait's progress line, then its outcome.
"""

from __future__ import annotations

import argparse

from ..client import Client
from .commands import EXIT_OK
from .fmt import clean, fmt


def cmd_watch(client: Client, args: argparse.Namespace) -> int:
    from ..experiment import Experiment

    exp = Experiment.attach(args.id, client=client)
    final = exp.wait(progress=True, poll_s=args.interval, raise_on_failure=False)
    line = f"experiment {final['id']} {clean(final['state'])}"
    if final.get("ended_reason") and final["ended_reason"] != final["state"]:
        line += f" ({clean(final['ended_reason'])})"
    best = final.get("best")
    if best:
        line += (f"; best {clean(final.get('metric'))} {fmt(best.get('value'))} "
                 f"(trial {best.get('trial_id')})")
    print(line)
    if final.get("error"):
        print(f"error: {clean(final['error'])}")
    return EXIT_OK
