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
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from typing import Any, Callable, Optional, Sequence

from .client import ApiError, Client, RungError, UnreachableError

__all__ = ["main"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TRIAL_FAILED = 3  # the trial logs --follow followed ended failed or canceled

SHOW_TRIALS = 20  # trials in `show`, best first, as the C client
NAME_WIDTH = 32  # the longest name `ls` shows before cutting it
MEMBERS_WIDTH = 32  # a gang's worker ids in `show`; up to 64 nodes would fill a line
SPACE_DEPTH_MAX = 8  # sub-spaces nest 8 levels deep at most (docs/api.md, "search_space")
GPU_NAME_WIDTH = 24  # a GPU's name in `workers` ("NVIDIA H100 80GB HBM3" fits)

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
_CONTROL_LINE_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\x80-\x9f]")


class CliError(Exception):
    """A local failure (a file that cannot be read, a spec that is not one):
    printed as `rung: MESSAGE`, exit status 1."""


def _clean(text: Any, keep_newlines: bool = False) -> str:
    """A daemon's string made safe for a terminal: control characters (and
    tabs and newlines, unless `keep_newlines`) become spaces or go."""
    text = "" if text is None else str(text)
    if keep_newlines:
        return _CONTROL_RE.sub("", text.replace("\r\n", "\n"))
    return _CONTROL_LINE_RE.sub(" ", text.replace("\r", "").replace("\n", " "))


def _fmt(value: Any) -> str:
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
        return _clean(value)
    return _clean(json.dumps(value, separators=(",", ":")))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]],
           right: Sequence[int] = ()) -> str:
    """A plain table: columns two spaces apart, no trailing blanks;
    `right` lists the columns aligned to the right. A cell may hold several
    lines ("\\n"), as a worker's GPUs do, one each: its row grows to fit."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max([widths[i]] + [len(part) for part in cell.split("\n")])
    lines = []
    for row in [list(headers)] + [list(r) for r in rows]:
        parts = [cell.split("\n") for cell in row]
        for k in range(max(len(p) for p in parts)):
            cells = [(p[k] if k < len(p) else "") for p in parts]
            cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                     for i, cell in enumerate(cells)]
            lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be from 0.1 to 3600 seconds, got {text!r}")
    return value


def _done(counts: dict) -> int:
    return sum((counts or {}).get(s, 0) for s in ("completed", "stopped", "failed", "canceled"))


# ---------------------------------------------------------------------------
# Commands. Each takes the Client and the parsed arguments and returns the
# exit status.


def _read_spec(path: str, wandb: bool, num_samples: Optional[int],
               as_yaml: bool = False) -> dict:
    """The spec in a file (`-` is stdin): YAML when its name ends in .yaml
    or .yml (any case) or with `as_yaml`, else JSON; or the spec of a W&B
    sweep file with `wandb`."""
    from ._yaml import load_json, load_yaml, read_document

    if wandb:
        from .convert import from_wandb

        if path == "-":
            raise CliError("submit --wandb: give the sweep file's path, not -")
        extra = {} if num_samples is None else {"num_samples": num_samples}
        try:
            return from_wandb(path, **extra).spec()
        except OSError as err:
            raise CliError(f"{path}: {err.strerror or err}") from None
        except ValueError as err:
            text = str(err).replace("pass num_samples=", "give --num-samples N")
            raise CliError(f"{path}: {text}") from None
    try:
        text = read_document(path)
    except OSError as err:
        raise CliError(f"{path}: {err.strerror or err}") from None
    except ValueError as err:
        raise CliError(f"{path}: {err}") from None
    try:
        if as_yaml or path.lower().endswith((".yaml", ".yml")):
            spec = load_yaml(text)
        else:
            spec = load_json(text)
    except ValueError as err:
        raise CliError(f"{path}: {err}") from None
    if not isinstance(spec, dict):
        raise CliError(f"{path}: an experiment spec is a JSON object (a YAML mapping)")
    if num_samples is not None:
        spec["num_samples"] = num_samples
    return spec


def cmd_submit(client: Client, args: argparse.Namespace) -> int:
    spec = _read_spec(args.spec, args.wandb, args.num_samples, args.yaml)
    exp = client.create_experiment(spec)
    if args.quiet:
        print(exp["id"])
    else:
        total = exp.get("total_trials")
        print(f"experiment {exp['id']} submitted: {_clean(exp.get('name'))}, {total} "
              f"trial{'' if total == 1 else 's'}")
    return EXIT_OK


def cmd_ls(client: Client, args: argparse.Namespace) -> int:
    items = client.list_experiments()
    if args.json:
        _print_json({"items": items, "total": len(items)})
        return EXIT_OK
    if not items:
        print("no experiments yet (submit one with: python3 -m rung submit SPEC.json)",
              file=sys.stderr)
        return EXIT_OK
    rows = []
    for x in items:
        best = (x.get("best") or {}).get("value")
        rows.append([str(x["id"]), _cut(_clean(x.get("name")), NAME_WIDTH), _clean(x.get("state")),
                     f"{_done(x.get('counts'))}/{x.get('total_trials')}",
                     str((x.get("counts") or {}).get("running", 0)), _fmt(best),
                     f"{_clean(x.get('metric'))} ({_clean(x.get('mode'))})",
                     _clean((x.get("searcher") or {}).get("type", "random"))])
    print(_table(["ID", "NAME", "STATE", "DONE", "RUNNING", "BEST", "METRIC", "SEARCHER"], rows,
                 right=(0, 3, 4, 5)))
    return EXIT_OK


def _describe(obj: Any) -> str:
    """`bayes (seed 1, n_initial 10)`: an object's type and its other members."""
    if not isinstance(obj, dict):
        return _fmt(obj)
    rest = ", ".join(f"{_clean(k)} {_fmt(v)}" for k, v in obj.items() if k != "type")
    return f"{_clean(obj.get('type'))} ({rest})" if rest else _clean(obj.get("type"))


def _nodes(x: dict) -> int:
    """resources_per_trial.nodes: how many workers run each trial together
    (docs/api.md, "Gangs"); 1 when absent."""
    nodes = (x.get("resources_per_trial") or {}).get("nodes", 1)
    return nodes if isinstance(nodes, int) else 1


def _resources(x: dict) -> str:
    """"cpu 1, gpu 0" per trial; for a gang "2 nodes, each cpu 1, gpu 0
    (gang_wait_s 60)", as the C client's `show`."""
    r = x.get("resources_per_trial") or {}
    text = f"cpu {_fmt(r.get('cpu', 1))}, gpu {_fmt(r.get('gpu', 0))}"
    if _nodes(x) > 1:
        text = f"{_nodes(x)} nodes, each {text} (gang_wait_s {_fmt(r.get('gang_wait_s', 60))})"
    return text


def _members(t: dict) -> str:
    """"3,4": a running gang trial's members' worker ids, by rank; "" for
    any other trial (one that is not running keeps its last gang for
    inspection, naming workers that no longer run it)."""
    gang = t.get("gang")
    if t.get("state") != "running" or not isinstance(gang, dict):
        return ""
    members = [m for m in gang.get("members") or [] if isinstance(m, dict)]
    members.sort(key=lambda m: m.get("rank", 0))
    return _cut(",".join(_fmt(m.get("worker_id")) for m in members), MEMBERS_WIDTH)


def _space_paths(space: Any, prefix: str, in_branch: bool, cols: list[str],
                 known: set[str], depth: int = 0) -> None:
    """Walks a (sub-)space in spec order (docs/api.md, "Nested and
    conditional spaces"): appends to `cols` each path that gets a column and
    adds to `known` every path the spec names. A searched parameter gets a
    column, and so does a constant inside a branch (it tells the branches
    apart, `opt.name`); other constants are the same in every trial."""
    if not isinstance(space, dict):
        return
    for key, value in space.items():
        path = f"{prefix}.{key}" if prefix else key
        fresh = path not in known
        known.add(path)
        domain = isinstance(value, dict) and isinstance(value.get("type"), str)
        branches = value.get("values") if domain and value.get("type") == "choice" else None
        if depth < SPACE_DEPTH_MAX and isinstance(branches, list) and branches \
                and isinstance(branches[0], dict):
            for branch in branches:
                _space_paths(branch, path, True, cols, known, depth + 1)
        elif isinstance(value, dict) and not domain and depth < SPACE_DEPTH_MAX:
            _space_paths(value, path, in_branch, cols, known, depth + 1)
        elif fresh and (domain or in_branch):
            cols.append(path)


def _param_columns(space: Any, trials: Sequence[dict]) -> list[str]:
    """The parameter columns of a trials table: the flattened config keys the
    trials hold (configs are flat, with dotted paths, and hold only the
    branches taken), in spec order, then any key the spec does not name."""
    cols: list[str] = []
    known: set[str] = set()
    _space_paths(space, "", False, cols, known)
    held: dict[str, None] = {}
    for t in trials:
        held.update(dict.fromkeys(t.get("config") or {}))
    return [c for c in cols if c in held] + [k for k in held if k not in known]


def cmd_show(client: Client, args: argparse.Namespace) -> int:
    x = client.get_experiment(args.id)
    if args.json:
        _print_json(x)
        return EXIT_OK
    counts = x.get("counts") or {}
    print(f"experiment {x['id']}: {_clean(x.get('name'))}")
    state = _clean(x.get("state"))
    if x.get("ended_reason"):
        state += f" ({_clean(x['ended_reason'])})"
    print(f"  {'state:':<12}{state}")
    if x.get("error"):
        print(f"  {'error:':<12}{_clean(x['error'])}")
    objectives = x.get("metrics")
    if objectives:
        # Several objectives and constraints (docs/api.md), as rung show.
        print(f"  {'metrics:':<12}"
              + ", ".join(f"{_clean(m.get('name'))} ({_clean(m.get('mode'))})"
                          for m in objectives))
    else:
        print(f"  {'metric:':<12}{_clean(x.get('metric'))} ({_clean(x.get('mode'))})")
    if x.get("constraints"):
        print(f"  {'constraints:':<13}" + ", ".join(_bound(c) for c in x["constraints"]))
    print(f"  {'searcher:':<12}{_describe(x.get('searcher'))}")
    print(f"  {'scheduler:':<12}{_describe(x.get('scheduler'))}")
    trainable = x.get("trainable") or {}
    if trainable.get("type") == "command":
        what = "command: " + " ".join(_clean(a) for a in trainable.get("argv", []))
    else:
        what = _describe(trainable)
    print(f"  {'trainable:':<12}{what}")
    print(f"  {'resources:':<12}{_resources(x)}")
    print(f"  {'samples:':<12}{x.get('num_samples')} ({x.get('total_trials')} trials in all)")
    progress = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    print(f"  {'progress:':<12}{_done(counts)}/{x.get('total_trials')} done"
          + (f" ({progress})" if progress else ""))
    best = x.get("best")
    if best:
        print(f"  {'best:':<12}{_fmt(best.get('value'))} (trial {best.get('trial_id')}, step "
              f"{best.get('step')}) {_fmt(best.get('config'))}")
    print("  search space:")
    for name, domain in (x.get("search_space") or {}).items():
        shown = _describe(domain) if isinstance(domain, dict) else f"{_fmt(domain)} (constant)"
        print(f"    {_clean(name):<14}{shown}")
    if objectives:
        _print_pareto(objectives, x.get("pareto") or [])
    if (x.get("scheduler") or {}).get("type") in ("pbt", "pb2") and best:
        _print_schedule(x, client.get_trial(best["trial_id"]))
    trials = client.list_trials(args.id, sort="value")
    if not trials:
        print("\nno trials yet")
        return EXIT_OK
    shown = trials[:SHOW_TRIALS]
    print(f"\ntrials ({'first ' if len(shown) < len(trials) else ''}{len(shown)} of "
          f"{len(trials)}, by best "
          f"{_clean(objectives[0].get('name') if objectives else x.get('metric'))}):")
    params = _param_columns(x.get("search_space"), shown)
    # A gang experiment's trials: their nodes, and who runs a running one.
    gang = _nodes(x) > 1
    rows = []
    for t in shown:
        warn = (t.get("warnings") or {}).get("count", 0)
        error = _clean((t.get("error") or "").split("\n", 1)[0])
        config = t.get("config") or {}
        rows.append([str(t["id"]), str(t.get("number")), _clean(t.get("state"))]
                    + ([_fmt(t.get("nodes", _nodes(x))), _members(t)] if gang else [])
                    + [_fmt((t.get("best") or {}).get("value")), _fmt(t.get("step"))]
                    + [_cut(_fmt(config[p]), 16) if p in config else "" for p in params]
                    + [str(warn) if warn else "", _cut(error, 60)])
    right = (0, 1, 3, 5, 6) if gang else (0, 1, 3, 4)
    print(_table(["TRIAL", "#", "STATE"] + (["NODES", "MEMBERS"] if gang else [])
                 + ["BEST", "STEP"] + [_cut(_clean(p), 16) for p in params] + ["WARN", "ERROR"],
                 rows, right=right))
    return EXIT_OK


def _bound(c: dict) -> str:
    """A constraint as rung show writes it: 'min <= name <= max'."""
    text = _clean(c.get("metric"))
    if c.get("min") is not None:
        text = f"{_fmt(c['min'])} <= {text}"
    if c.get("max") is not None:
        text = f"{text} <= {_fmt(c['max'])}"
    return text


def _print_schedule(x: dict, trial: dict) -> None:
    """pbt (docs/schedulers.md): the schedule a trial was trained with, the
    mutated parameters from step 1 and from each exploit on, as rung show."""
    sched = x.get("scheduler") or {}
    mutations = sched.get("hyperparam_mutations") or sched.get("hyperparam_bounds") or {}
    lineage = trial.get("lineage") or []

    def values(config: dict) -> str:
        return ", ".join(f"{_clean(k)} {_fmt((config or {}).get(k))}" for k in mutations)

    n = len(lineage)
    print(f"schedule of trial {trial.get('id')} ({n} exploit{'' if n == 1 else 's'}):")
    print("  from step 1: " + values(lineage[0].get("from") if lineage else trial.get("config")))
    for e in lineage:
        print(f"  from step {e.get('step', 0) + 1} (trial {e.get('donor')}'s checkpoint of step "
              f"{e.get('donor_step')}): " + values(e.get("config")))


def _print_pareto(objectives: list, pareto: list) -> None:
    """The Pareto front, a trial a line with each objective's value."""
    if not pareto:
        print("pareto front: none yet")
        return
    print(f"pareto front ({len(pareto)} trials):")
    for p in pareto:
        values = p.get("values") or {}
        shown = ", ".join(f"{_clean(m.get('name'))} {_fmt(values.get(m.get('name')))}"
                          for m in objectives)
        config = ", ".join(f"{_clean(k)}={_fmt(v)}" for k, v in (p.get("config") or {}).items())
        print(f"  trial {p.get('trial_id')}: {shown}  config: {config or '-'}")


def cmd_watch(client: Client, args: argparse.Namespace) -> int:
    from .experiment import Experiment

    exp = Experiment.attach(args.id, client=client)
    final = exp.wait(progress=True, poll_s=args.interval, raise_on_failure=False)
    line = f"experiment {final['id']} {_clean(final['state'])}"
    if final.get("ended_reason") and final["ended_reason"] != final["state"]:
        line += f" ({_clean(final['ended_reason'])})"
    best = final.get("best")
    if best:
        line += (f"; best {_clean(final.get('metric'))} {_fmt(best.get('value'))} "
                 f"(trial {best.get('trial_id')})")
    print(line)
    if final.get("error"):
        print(f"error: {_clean(final['error'])}")
    return EXIT_OK


def _print_state(x: dict) -> None:
    counts = x.get("counts") or {}
    print(f"experiment {x['id']}: {_clean(x.get('state'))} "
          f"({_done(counts)}/{x.get('total_trials')} done, {counts.get('running', 0)} running)")


def cmd_cancel(client: Client, args: argparse.Namespace) -> int:
    x = client.cancel_experiment(args.id)
    _print_state(x)
    running = (x.get("counts") or {}).get("running", 0)
    if running:
        print(f"{running} running trial{'' if running == 1 else 's'} will stop at their next "
              "report")
    return EXIT_OK


def cmd_pause(client: Client, args: argparse.Namespace) -> int:
    _print_state(client.pause_experiment(args.id, "pause" if args.running else "finish"))
    return EXIT_OK


def cmd_resume(client: Client, args: argparse.Namespace) -> int:
    _print_state(client.resume_experiment(args.id))
    return EXIT_OK


def cmd_extend(client: Client, args: argparse.Namespace) -> int:
    x = client.patch_experiment(args.id, num_samples=args.num_samples)
    print(f"experiment {x['id']}: num_samples {x.get('num_samples')} "
          f"({x.get('total_trials')} trials in all), {_clean(x.get('state'))}")
    return EXIT_OK


def cmd_set(client: Client, args: argparse.Namespace) -> int:
    fields = {k: v for k, v in (("priority", args.priority), ("share", args.share),
                                ("max_concurrent_trials", args.max_concurrent),
                                ("num_samples", args.num_samples)) if v is not None}
    if not fields:
        raise _Usage("set: give at least one of --priority, --share, --max-concurrent, "
                     "--num-samples")
    x = client.patch_experiment(args.id, **fields)
    print(f"experiment {x['id']}: " + ", ".join(f"{k} {_fmt(x.get(k))}" for k in fields))
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
        print(f"trial {t['id']}: {_clean(t.get('state'))}")
    return EXIT_OK


def cmd_retry(client: Client, args: argparse.Namespace) -> int:
    reply = client.retry_failed(args.id)
    n = reply.get("retried", 0)
    x = reply.get("experiment") or {}
    print(f"experiment {x.get('id', args.id)}: {n} failed trial{'' if n == 1 else 's'} back in "
          f"line, {_clean(x.get('state'))}")
    return EXIT_OK


_TRIAL_OVER = ("completed", "stopped", "failed", "canceled")


def _overlap(old: str, new: str) -> int:
    """How much of new's head repeats old's tail: the tail is a window that
    slides over the log, so the new lines are what follows the overlap."""
    for k in range(min(len(old), len(new)), 0, -1):
        if old.endswith(new[:k]):
            return k
    return 0


def _transient(err: Exception) -> bool:
    """rungd restarting or behind a proxy that is: worth asking again."""
    return isinstance(err, UnreachableError) or (
        isinstance(err, ApiError) and err.status in (502, 503, 504))


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
            if not (args.follow and shown is not None and _transient(err)):
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
            out = _clean(text[skip:], keep_newlines=True)
            sys.stdout.write(out)
            last = out[-1:] or last
            shown, shown_attempt, anew = text, attempt, False
        sys.stdout.flush()
        if not args.follow or t.get("state") in _TRIAL_OVER:
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
        first = _clean(error[:255])
        print(f"rung: trial {args.trial_id} {state}" + (f": {first}" if first else ""),
              file=sys.stderr)
        return EXIT_TRIAL_FAILED
    return EXIT_OK


def cmd_export(client: Client, args: argparse.Namespace) -> int:
    text = client.trials_csv(args.id)
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with open(args.output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as err:
        raise CliError(f"{args.output}: {err.strerror or err}") from None
    rows = max(0, len(text.splitlines()) - 1)  # CSV cells may hold line breaks: near enough
    print(f"exported {rows} trial{'' if rows == 1 else 's'} of experiment {args.id} to "
          f"{args.output}", file=sys.stderr)
    return EXIT_OK


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
    state = _clean(state)
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
        line = f"{_fmt(index)} {_cut(_clean(g.get('name') or 'GPU'), GPU_NAME_WIDTH)}"
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
        _print_json({"items": items, "total": len(items)})
        return EXIT_OK
    if not items:
        print("no workers (start one with: rung-worker --server URL)", file=sys.stderr)
        return EXIT_OK
    rows = []
    for w in items:
        labels = ",".join(f"{k}={v}" for k, v in (w.get("labels") or {}).items())
        running = ",".join(str(i) for i in (w.get("running_trials") or [])) or "-"
        state = _clean(w.get("state") or ("alive" if w.get("alive") else "gone"))
        nxt = _next_lease(w)
        rows.append([str(w["id"]), _cut(_clean(w.get("name")), NAME_WIDTH),
                     state + ("\n" + nxt if nxt else ""), str(w.get("cpus")), _gpus_cell(w),
                     running, _cut(_clean(labels), 40)])
    print(_table(["ID", "NAME", "STATE", "CPUS", "GPUS", "RUNNING", "LABELS"], rows,
                 right=(0, 3)))
    return EXIT_OK


def cmd_best(client: Client, args: argparse.Namespace) -> int:
    from .experiment import Experiment

    exp = Experiment.attach(args.id, client=client)
    result = exp.best(scope=args.scope)
    if args.json:
        _print_json(None if result is None else {
            "trial_id": result.trial_id, "value": result.value, "step": result.step,
            "config": result.config})
        return EXIT_OK
    if result is None:
        print(f"experiment {args.id}: no trial has reported {_clean(exp.metric)} yet",
              file=sys.stderr)
        return EXIT_OK
    print(f"trial {result.trial_id}: {_clean(exp.metric)} {_fmt(result.value)} at step "
          f"{_fmt(result.step)}")
    for name, value in result.config.items():
        print(f"  {_clean(name)}: {_fmt(value)}")
    return EXIT_OK


def cmd_run_function(client: Optional[Client], args: argparse.Namespace) -> int:
    from .trial import run_function

    run_function(args.file, args.function)
    return EXIT_OK


# ---------------------------------------------------------------------------
# The parser.


class _Usage(Exception):
    """A usage error found after parsing (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse with `rung: ...` usage errors and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"rung: {message}", file=sys.stderr)
        print("run 'python3 -m rung --help' for every command", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


# (name, arguments, help, function, how to add its arguments), in the
# order of --help: the C client's table (cli/main.c), then best and
# run-function.
_COMMANDS: list[tuple[str, str, str, Callable, Callable[[argparse.ArgumentParser], Any]]] = []


def _command(name: str, arguments: str, help_text: str, run: Callable,
             add: Callable[[argparse.ArgumentParser], Any] = lambda p: None) -> None:
    _COMMANDS.append((name, arguments, help_text, run, add))


def _id(p: argparse.ArgumentParser, name: str = "id", what: str = "the experiment's id") -> None:
    p.add_argument(name, type=_positive_int, metavar=name.upper(), help=what)


def _trial_id(p: argparse.ArgumentParser) -> None:
    _id(p, "trial_id", "the trial's id")


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the API's objects")


def _add_submit(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="a spec as JSON, or YAML (.yaml, .yml); - "
                   "reads stdin")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the id")
    p.add_argument("--yaml", action="store_true", help="read SPEC (or stdin) as YAML")
    p.add_argument("--wandb", action="store_true",
                   help="SPEC is a W&B sweep file (rung.convert says how it maps)")
    p.add_argument("--num-samples", type=_positive_int, metavar="N",
                   help="set num_samples (a W&B sweep's random or bayes search needs it "
                   "when it has no run_cap)")


def _add_watch(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--interval", type=_interval, default=1.0, metavar="S",
                   help="seconds between polls (default 1)")


def _add_pause(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--running", action="store_true", help="pause the running trials too")


def _add_extend(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("num_samples", type=_positive_int, metavar="NUM_SAMPLES")


def _add_set(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--priority", type=int, metavar="P")
    p.add_argument("--share", type=float, metavar="S")
    p.add_argument("--max-concurrent", type=int, metavar="N")
    p.add_argument("--num-samples", type=_positive_int, metavar="N")


def _add_export(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("-o", "--output", metavar="FILE", help="the file (default: stdout)")


def _add_workers(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="also the forgotten ones")
    _add_json(p)


def _add_best(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--scope", choices=("all", "last"),
                   help="all: a trial's best value at any step; last: its last value "
                   "(default: the experiment's best_scope)")
    _add_json(p)


def _add_run_function(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("function", metavar="FUNC")


def cmd_help(client: Optional[Client], args: argparse.Namespace) -> int:
    """Stands for `help` in main(), which prints the parser's help."""
    return EXIT_OK


_command("submit", "SPEC|- [--yaml] [-q] [--wandb] [--num-samples N]",
         "submit an experiment, JSON or YAML, or a W&B sweep (-q: print only its id)",
         cmd_submit, _add_submit)
_command("ls", "[--json]", "list experiments, newest first", cmd_ls, _add_json)
_command("show", "ID [--json]",
         "an experiment: settings, state, error, best trial, its best 20 trials", cmd_show,
         lambda p: (_id(p), _add_json(p)))
_command("watch", "ID [--interval S]", "follow an experiment until it ends", cmd_watch,
         _add_watch)
_command("cancel", "ID", "cancel an experiment (pending trials are dropped)", cmd_cancel, _id)
_command("pause", "ID [--running]",
         "lease nothing more (--running: pause running trials too, to resume later)",
         cmd_pause, _add_pause)
_command("resume", "ID", "resume a paused experiment", cmd_resume, _id)
_command("extend", "ID NUM_SAMPLES", "raise num_samples (a completed experiment runs again)",
         cmd_extend, _add_extend)
_command("set", "ID [--priority P] [--share S] [--max-concurrent N] [--num-samples N]",
         "change a submitted experiment's settings", cmd_set, _add_set)
_command("stop-trial", "TRIAL_ID", "stop one trial (stopped_by user)", cmd_stop_trial,
         _trial_id)
_command("retry", "ID", "put the failed trials back in line (the experiment runs again)",
         cmd_retry, _id)
_command("delete", "ID", "delete an ended experiment with its trials and reports", cmd_delete,
         _id)
def _add_logs(p: argparse.ArgumentParser) -> None:
    _trial_id(p)
    p.add_argument("-f", "--follow", action="store_true",
                   help="print what is new until the trial ends")
    p.add_argument("--interval", type=_interval, default=1.0, metavar="S",
                   help="seconds between polls with --follow (default 1)")


_command("logs", "TRIAL_ID [--follow] [--interval S]",
         "a trial's log tail (--follow: until the trial ends; exit 3 if it failed)", cmd_logs,
         _add_logs)
_command("export", "ID [-o FILE]", "write the experiment's trials as CSV", cmd_export,
         _add_export)
_command("workers", "[--all] [--json]",
         "list workers, their GPUs, running trials (--all: gone ones too)", cmd_workers,
         _add_workers)
_command("best", "ID [--scope all|last] [--json]",
         "the best trial: its value, step and config", cmd_best, _add_best)
_command("run-function", "FILE FUNC",
         "(for workers) run FUNC(rung.config()) from the Python file FILE",
         cmd_run_function, _add_run_function)
_command("help", "", "show this help", cmd_help)


def _commands_text() -> str:
    """The command table of --help, laid out as the C client's."""
    lines = ["commands:"]
    for name, arguments, help_text, _, _ in _COMMANDS:
        head = f"{name} {arguments}".rstrip()
        if len(head) > 34:
            lines.append(f"  {head}")
            lines.append(f"  {'':<34}  {help_text}")
        else:
            lines.append(f"  {head:<34}  {help_text}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python3 -m rung`, with one subcommand per verb."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--server", metavar="URL", default=argparse.SUPPRESS,
                        help="rungd's address (default $RUNG_SERVER, else "
                        "http://127.0.0.1:8080)")
    common.add_argument("--token", metavar="T", default=argparse.SUPPRESS,
                        help="the bearer token (default $RUNG_TOKEN)")
    parser = _Parser(prog="python3 -m rung", parents=[common],
                     usage="python3 -m rung [--server URL] [--token T] COMMAND [ARGS]",
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     description="Rung's command line client in Python: the verbs of the C "
                     "client `rung`\n(docs/api.md, Command lines), and best.\n\n"
                     + _commands_text(),
                     epilog="Exit status: 0 done, 1 the request failed, 2 bad arguments.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                                help=argparse.SUPPRESS)
    for name, _, help_text, run, add in _COMMANDS:
        p = sub.add_parser(name, prog=f"python3 -m rung {name}", description=help_text,
                           parents=[common])
        add(p)
        p.set_defaults(run=run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.run is cmd_help:
        parser.print_help(sys.stdout)
        return EXIT_OK
    if args.run is cmd_run_function:
        return cmd_run_function(None, args)
    client = Client(server=getattr(args, "server", None), token=getattr(args, "token", None))
    try:
        return args.run(client, args)
    except _Usage as err:
        print(f"rung: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ApiError as err:
        # The same line as the C client's (cli/http.c, cli_error_print).
        text = f"{err.code}: {err.message}"
        if err.field:
            text += f" (field {err.field})"
        print(f"rung: {_clean(text)}", file=sys.stderr)
        if err.status == 401:
            print("rung: hint: pass --token T or set RUNG_TOKEN to the daemon's token",
                  file=sys.stderr)
        return EXIT_ERROR
    except UnreachableError as err:
        print(f"rung: {_clean(str(err))}", file=sys.stderr)
        return EXIT_ERROR
    except (CliError, RungError) as err:
        print(f"rung: {_clean(str(err))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `python3 -m rung ls | head`: the reader left; nothing to report.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
