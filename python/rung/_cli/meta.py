"""Tags and notes (docs/api.md, "Tags and notes"), as cli/meta.c: `tag`
and `note` of an experiment, or of a trial with --trial. A tag change
reads the tags and PATCHes the whole new list."""

from __future__ import annotations

import argparse
import sys

from ..client import Client
from .commands import EXIT_OK
from .fmt import clean, join_tags


def _get(client: Client, trial: bool, oid: int) -> dict:
    return client.get_trial(oid) if trial else client.get_experiment(oid)


def _patch(client: Client, trial: bool, oid: int, **fields: object) -> dict:
    if trial:
        return client.patch_trial(oid, **fields)
    return client.patch_experiment(oid, **fields)


def cmd_tag(client: Client, args: argparse.Namespace) -> int:
    kind = "trial" if args.trial else "experiment"
    tags = list(_get(client, args.trial, args.id).get("tags") or [])
    if args.changes:
        for change in args.changes:
            # "+T" and "T" add T (once), "-T" removes it; rungd checks the rest.
            remove = change.startswith("-")
            name = change[1:] if change[:1] in "+-" and change else change
            if remove and name in tags:
                tags.remove(name)
            elif not remove and name not in tags:
                tags.append(name)
        tags = _patch(client, args.trial, args.id, tags=tags).get("tags") or []
    print(f"{kind} {args.id}: tags {join_tags(tags)}")
    return EXIT_OK


def cmd_note(client: Client, args: argparse.Namespace) -> int:
    kind = "trial" if args.trial else "experiment"
    if args.text is None:
        notes = clean(_get(client, args.trial, args.id).get("notes") or "", keep_newlines=True)
        if notes:
            print(notes, end="" if notes.endswith("\n") else "\n")
        return EXIT_OK
    text = sys.stdin.read(65537) if args.text == "-" else args.text
    x = _patch(client, args.trial, args.id, notes=text)
    print(f"{kind} {args.id}: notes set ({len(x.get('notes', '').encode())} bytes)")
    return EXIT_OK
