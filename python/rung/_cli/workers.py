"""`python3 -m rung workers` (cli/workers.c): the workers the daemon knows,
with their GPUs as the last heartbeat described them: usage, and whether
each is spare, held by a trial, busy with other people's work or waiting
to be idle long enough (docs/workers.md), and when a worker outside its
--hours leases next.
"""

from __future__ import annotations

import argparse
import re
import sys

from ..client import Client
from .commands import EXIT_OK, print_json
from .fmt import NAME_WIDTH, clean, cut, fmt
from .table import table

GPU_NAME_WIDTH = 24  # a GPU's name in `workers` ("NVIDIA H100 80GB HBM3" fits)

_RFC3339_RE = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|z|[+-]\d\d:\d\d)$")


def _next_lease(w: dict) -> str:
    """"next lease Mon 19:00" (local time) for an alive worker outside its
    --hours (its heartbeat's next_lease_at), else ""."""
    import datetime

    at = (w.get("heartbeat") or {}).get("next_lease_at")
    m = _RFC3339_RE.match(at) if isinstance(at, str) else None
    if m is None or (w.get("state") or ("alive" if w.get("alive") else "gone")) != "alive":
        return ""
    offset = m.group(3)
    tz = datetime.timezone.utc
    if offset not in ("Z", "z"):
        sign = -1 if offset[0] == "-" else 1
        tz = datetime.timezone(sign * datetime.timedelta(hours=int(offset[1:3]),
                                                         minutes=int(offset[4:6])))
    try:
        when = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=tz)
    except ValueError:
        return ""
    return "next lease " + when.astimezone().strftime("%a %H:%M")


def _gpu_state(st: dict) -> str:
    """", trial 17", ", spare", ", busy: others hold 2048 MiB, use 40%",
    ", waiting": a GPU's state from the heartbeat, as the C client's
    `workers` shows it (docs/workers.md, "Spare GPUs"); "" without one."""
    state = st.get("state")
    if not isinstance(state, str):
        return ""
    state = clean(state)
    mb = st.get("foreign_mb") if isinstance(st.get("foreign_mb"), int) else 0
    util = st.get("foreign_util")
    pct = util * 100 if isinstance(util, (int, float)) and not isinstance(util, bool) else 0
    trial = st.get("trial_id")
    if state == "trial" and isinstance(trial, int) and trial > 0:
        text = f", trial {trial}"
    else:
        text = f", {state}"
    # Other people's use: why it is busy, or what a trial shares it with.
    others = f"others hold {mb} MiB, use {pct:.0f}%"
    if state == "busy":
        text += f": {others}"
    elif mb > 0 or pct >= 1:
        text += f" ({others})"
    return text


def _gpus_cell(w: dict) -> str:
    """One line per GPU: "0 NVIDIA H100 97% 40211/81559 MiB, trial 17"; the
    utilization, memory in use and state only when the last heartbeat
    carried them."""
    gpus = [g for g in (w.get("gpus") or []) if isinstance(g, dict)]
    if not gpus:
        return "-"
    beat = {g.get("index"): g for g in ((w.get("heartbeat") or {}).get("gpus") or [])
            if isinstance(g, dict)}
    lines = []
    for i, g in enumerate(gpus):
        index = g.get("index", i)
        line = f"{fmt(index)} {cut(clean(g.get('name') or 'GPU'), GPU_NAME_WIDTH)}"
        st = beat.get(index) or {}
        util = st.get("util")
        if isinstance(util, (int, float)) and not isinstance(util, bool):
            # docs/api.md sends a fraction (0.97); percent (97) is shown as meant.
            line += f" {util * 100 if util <= 1 else util:.0f}%"
        used, total = st.get("memory_used_mb"), g.get("memory_mb")
        has_used = isinstance(used, (int, float)) and not isinstance(used, bool)
        if has_used:
            line += f" {used:.0f}"
        if isinstance(total, int) and total >= 0:
            line += f"{'/' if has_used else ' '}{total} MiB"
        elif has_used:
            line += " MiB"
        lines.append(line + _gpu_state(st))
    return "\n".join(lines)


def cmd_workers(client: Client, args: argparse.Namespace) -> int:
    items = client.list_workers(all=args.all)
    if args.json:
        print_json({"items": items, "total": len(items)})
        return EXIT_OK
    if not items:
        print("no workers (start one with: rung-worker --server URL)", file=sys.stderr)
        return EXIT_OK
    rows = []
    for w in items:
        labels = ",".join(f"{k}={v}" for k, v in (w.get("labels") or {}).items())
        running = ",".join(str(i) for i in (w.get("running_trials") or [])) or "-"
        state = clean(w.get("state") or ("alive" if w.get("alive") else "gone"))
        nxt = _next_lease(w)
        rows.append([str(w["id"]), cut(clean(w.get("name")), NAME_WIDTH),
                     state + ("\n" + nxt if nxt else ""), str(w.get("cpus")), _gpus_cell(w),
                     running, cut(clean(labels), 40)])
    print(table(["ID", "NAME", "STATE", "CPUS", "GPUS", "RUNNING", "LABELS"], rows,
                right=(0, 3)))
    return EXIT_OK
