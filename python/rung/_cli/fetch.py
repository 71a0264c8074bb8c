"""`python3 -m rung fetch TRIAL [DIR]` (cli/fetch.c): a completed trial's
kept artifacts, their hash checked, unpacked into DIR (default trial-ID)."""

from __future__ import annotations

import argparse

from .._pack import download_artifacts
from ..client import Client
from .commands import EXIT_OK


def cmd_fetch(client: Client, args: argparse.Namespace) -> int:
    dest = args.dir or f"trial-{args.trial_id}"
    download_artifacts(client, args.trial_id, dest)
    size = (client.get_trial(args.trial_id).get("artifacts") or {}).get("size")
    sha = (client.get_trial(args.trial_id).get("artifacts") or {}).get("sha256", "")
    print(f"trial {args.trial_id}: artifacts ({size} bytes, sha256:{sha[:12]}…) in {dest}")
    return EXIT_OK
