"""Steering a running search with `python3 -m rung` (cli/control.c):
pause, resume, extend, set, stop-trial, delete, retry, and a trial's log.
Each is one request (logs --follow, one a poll); what the daemon answers
is shown in a line.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Optional

from ..client import Client, RungError
from .commands import EXIT_OK, EXIT_TRIAL_FAILED, UsageError
from .fmt import TRIAL_OVER, clean, fmt
from .rest import transient
from .view import print_state


def cmd_pause(client: Client, args: argparse.Namespace) -> int:
    print_state(client.pause_experiment(args.id, "pause" if args.running else "finish"))
    return EXIT_OK


def cmd_resume(client: Client, args: argparse.Namespace) -> int:
    print_state(client.resume_experiment(args.id))
    return EXIT_OK


def cmd_extend(client: Client, args: argparse.Namespace) -> int:
    x = client.patch_experiment(args.id, num_samples=args.num_samples)
    print(f"experiment {x['id']}: num_samples {x.get('num_samples')} "
          f"({x.get('total_trials')} trials in all), {clean(x.get('state'))}")
    return EXIT_OK


def cmd_set(client: Client, args: argparse.Namespace) -> int:
    fields = {k: v for k, v in (("priority", args.priority), ("share", args.share),
                                ("max_concurrent_trials", args.max_concurrent),
                                ("num_samples", args.num_samples)) if v is not None}
    if not fields:
        raise UsageError("set: give at least one of --priority, --share, --max-concurrent, "
                         "--num-samples")
    x = client.patch_experiment(args.id, **fields)
    print(f"experiment {x['id']}: " + ", ".join(f"{k} {fmt(x.get(k))}" for k in fields))
    return EXIT_OK


def cmd_delete(client: Client, args: argparse.Namespace) -> int:
    reply = client.delete_experiment(args.id)
    trials = reply.get("trials", 0)
    print(f"experiment {reply.get('deleted', args.id)} deleted with {trials} "
          f"trial{'' if trials == 1 else 's'}")
    return EXIT_OK


def cmd_stop_trial(client: Client, args: argparse.Namespace) -> int:
    t = client.stop_trial(args.trial_id)
    if t.get("state") == "running":
        print(f"trial {t['id']}: stops at its next report")
    else:
        print(f"trial {t['id']}: {clean(t.get('state'))}")
    return EXIT_OK


def cmd_retry(client: Client, args: argparse.Namespace) -> int:
    reply = client.retry_failed(args.id)
    n = reply.get("retried", 0)
    x = reply.get("experiment") or {}
    print(f"experiment {x.get('id', args.id)}: {n} failed trial{'' if n == 1 else 's'} back in "
          f"line, {clean(x.get('state'))}")
    return EXIT_OK


def _overlap(old: str, new: str) -> int:
    """How much of new's head repeats old's tail: the tail is a window that
    slides over the log, so the new lines are what follows the overlap."""
    for k in range(min(len(old), len(new)), 0, -1):
        if old.endswith(new[:k]):
            return k
    return 0


def cmd_logs(client: Client, args: argparse.Namespace) -> int:
    """The trial's log_tail; with --follow, what is new every interval until
    the trial ends, as the C client's logs (docs/api.md, "rung")."""
    shown: Optional[str] = None  # the tail printed so far
    shown_attempt = 0            # the attempt whose log that is
    anew = False                 # a new attempt's next tail is printed whole
    last = ""                    # the last character printed
    while True:
        try:
            t = client.get_trial(args.trial_id)
        except RungError as err:
            if not (args.follow and shown is not None and transient(err)):
                if last not in ("", "\n"):
                    sys.stdout.write("\n")
                raise
            time.sleep(args.interval)  # the log is kept in the store: go on
            continue
        text = (t.get("log_tail") or "").split("\0", 1)[0]
        attempt = t.get("attempt") or 0
        if shown is not None and attempt != shown_attempt:
            # A retry runs the trainable again: its log starts anew.
            if last not in ("", "\n"):
                sys.stdout.write("\n")
            sys.stdout.flush()
            print(f"rung: trial {args.trial_id}: attempt {attempt}", file=sys.stderr)
            shown_attempt, anew = attempt, True
        # Nothing new: the tail printed, or (within one attempt) part of it,
        # an older tail after a restart of rungd; no line prints twice.
        stale = shown is not None and (text == shown if anew else text in shown)
        if not stale:
            skip = _overlap(shown, text) if shown is not None and not anew else 0
            out = clean(text[skip:], keep_newlines=True)
            sys.stdout.write(out)
            last = out[-1:] or last
            shown, shown_attempt, anew = text, attempt, False
        sys.stdout.flush()
        if not args.follow or t.get("state") in TRIAL_OVER:
            break
        time.sleep(args.interval)
    if last not in ("", "\n"):
        sys.stdout.write("\n")
    state = t.get("state")
    if args.follow and state in ("failed", "canceled"):
        # Without its result: `rung logs 17 -f && next-step` stops here, as
        # with the C client (docs/api.md, "rung").
        sys.stdout.flush()
        error = t.get("error_summary") or (t.get("error") or "").split("\n", 1)[0]
        first = clean(error[:255])
        print(f"rung: trial {args.trial_id} {state}" + (f": {first}" if first else ""),
              file=sys.stderr)
        return EXIT_TRIAL_FAILED
    return EXIT_OK
