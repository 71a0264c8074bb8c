"""The experiment commands of `python3 -m rung` (cli/experiments.c):
submit, ls, show, cancel, export, and best, which the C client lacks. Each
takes the Client and the parsed arguments and returns the exit status.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from ..client import Client
from .commands import EXIT_OK, CliError, print_json
from .fmt import NAME_WIDTH, TAGS_WIDTH, clean, cut, done, fmt, join_tags
from .table import table
from .view import nodes, print_pareto, print_schedule, print_state, trials_table

SHOW_TRIALS = 20  # trials in `show`, best first, as the C client


def read_spec(path: str, wandb: bool, num_samples: Optional[int],
              as_yaml: bool = False) -> dict:
    """The spec in a file (`-` is stdin): YAML when its name ends in .yaml
    or .yml (any case) or with `as_yaml`, else JSON; or the spec of a W&B
    sweep file with `wandb`."""
    from .._yaml import load_json, load_yaml, read_document

    if wandb:
        from ..convert import from_wandb

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
    if "method" in spec and "parameters" in spec and "search_space" not in spec:
        # A W&B sweep file, as the C client recognizes one (cli/wandb.c).
        if path == "-":
            raise CliError("submit: a W&B sweep (method, parameters) needs its file's path, "
                           "not -")
        return read_spec(path, True, num_samples)
    if num_samples is not None:
        spec["num_samples"] = num_samples
    return spec


def cmd_submit(client: Client, args: argparse.Namespace) -> int:
    spec = read_spec(args.spec, args.wandb, args.num_samples, args.yaml)
    # A local working directory travels as a blob (python/rung/_pack.py).
    t = spec.get("trainable") if isinstance(spec.get("trainable"), dict) else {}
    local = t.get("working_dir")
    if args.working_dir or (isinstance(local, str) and not local.startswith("sha256:")):
        import os

        from .._pack import upload

        if t.get("type") != "command":
            raise CliError("trainable.working_dir: a working directory needs a command "
                             "trainable")
        folder = args.working_dir or os.path.join(
            os.path.dirname(args.spec) if args.spec != "-" else "", local)
        t["working_dir"] = upload(client, folder,
                                  say=lambda line: print(line, file=sys.stderr if args.quiet
                                                         else sys.stdout))
    exp = client.create_experiment(spec)
    if args.quiet:
        print(exp["id"])
    else:
        total = exp.get("total_trials")
        print(f"experiment {exp['id']} submitted: {clean(exp.get('name'))}, {total} "
              f"trial{'' if total == 1 else 's'}")
    return EXIT_OK


def cmd_ls(client: Client, args: argparse.Namespace) -> int:
    items = client.list_experiments(tag=getattr(args, "tag", None))
    if args.json:
        print_json({"items": items, "total": len(items)})
        return EXIT_OK
    if not items and getattr(args, "tag", None):
        print("no experiment has this tag", file=sys.stderr)
        return EXIT_OK
    if not items:
        print("no experiments yet (submit one with: python3 -m rung submit SPEC.json)",
              file=sys.stderr)
        return EXIT_OK
    rows = []
    for x in items:
        best = (x.get("best") or {}).get("value")
        rows.append([str(x["id"]), cut(clean(x.get("name")), NAME_WIDTH), clean(x.get("state")),
                     f"{done(x.get('counts'))}/{x.get('total_trials')}",
                     str((x.get("counts") or {}).get("running", 0)), fmt(best),
                     f"{clean(x.get('metric'))} ({clean(x.get('mode'))})",
                     clean((x.get("searcher") or {}).get("type", "random")),
                     cut(join_tags(x.get("tags")), TAGS_WIDTH)])
    print(table(["ID", "NAME", "STATE", "DONE", "RUNNING", "BEST", "METRIC", "SEARCHER", "TAGS"],
                rows,
                right=(0, 3, 4, 5)))
    return EXIT_OK


def _describe(obj: Any) -> str:
    """`bayes (seed 1, n_initial 10)`: an object's type and its other members."""
    if not isinstance(obj, dict):
        return fmt(obj)
    rest = ", ".join(f"{clean(k)} {fmt(v)}" for k, v in obj.items() if k != "type")
    return f"{clean(obj.get('type'))} ({rest})" if rest else clean(obj.get("type"))


def _resources(x: dict) -> str:
    """"cpu 1, gpu 0" per trial; for a gang "2 nodes, each cpu 1, gpu 0
    (gang_wait_s 60)", as the C client's `show`."""
    r = x.get("resources_per_trial") or {}
    text = f"cpu {fmt(r.get('cpu', 1))}, gpu {fmt(r.get('gpu', 0))}"
    if nodes(x) > 1:
        text = f"{nodes(x)} nodes, each {text} (gang_wait_s {fmt(r.get('gang_wait_s', 60))})"
    return text


def _bound(c: dict) -> str:
    """A constraint as rung show writes it: 'min <= name <= max'."""
    text = clean(c.get("metric"))
    if c.get("min") is not None:
        text = f"{fmt(c['min'])} <= {text}"
    if c.get("max") is not None:
        text = f"{text} <= {fmt(c['max'])}"
    return text


def cmd_show(client: Client, args: argparse.Namespace) -> int:
    x = client.get_experiment(args.id)
    if args.json:
        print_json(x)
        return EXIT_OK
    counts = x.get("counts") or {}
    print(f"experiment {x['id']}: {clean(x.get('name'))}")
    state = clean(x.get("state"))
    if x.get("ended_reason"):
        state += f" ({clean(x['ended_reason'])})"
    print(f"  {'state:':<12}{state}")
    if x.get("error"):
        print(f"  {'error:':<12}{clean(x['error'])}")
    print(f"  {'tags:':<12}{join_tags(x.get('tags'))}")
    notes = clean(x.get("notes") or "", keep_newlines=True).rstrip("\n").split("\n")
    if notes != [""]:
        print(f"  {'notes:':<12}" + "\n".join(("" if i == 0 else " " * 14) + line
                                              for i, line in enumerate(notes)))
    objectives = x.get("metrics")
    if objectives:
        # Several objectives and constraints (docs/api.md), as rung show.
        print(f"  {'metrics:':<12}"
              + ", ".join(f"{clean(m.get('name'))} ({clean(m.get('mode'))})"
                          for m in objectives))
    else:
        print(f"  {'metric:':<12}{clean(x.get('metric'))} ({clean(x.get('mode'))})")
    if x.get("constraints"):
        print(f"  {'constraints:':<13}" + ", ".join(_bound(c) for c in x["constraints"]))
    print(f"  {'searcher:':<12}{_describe(x.get('searcher'))}")
    print(f"  {'scheduler:':<12}{_describe(x.get('scheduler'))}")
    trainable = x.get("trainable") or {}
    if trainable.get("type") == "command":
        what = "command: " + " ".join(clean(a) for a in trainable.get("argv", []))
    else:
        what = _describe(trainable)
    print(f"  {'trainable:':<12}{what}")
    print(f"  {'resources:':<12}{_resources(x)}")
    print(f"  {'samples:':<12}{x.get('num_samples')} ({x.get('total_trials')} trials in all)")
    progress = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    print(f"  {'progress:':<12}{done(counts)}/{x.get('total_trials')} done"
          + (f" ({progress})" if progress else ""))
    best = x.get("best")
    if best:
        print(f"  {'best:':<12}{fmt(best.get('value'))} (trial {best.get('trial_id')}, step "
              f"{best.get('step')}) {fmt(best.get('config'))}")
    print("  search space:")
    for name, domain in (x.get("search_space") or {}).items():
        shown = _describe(domain) if isinstance(domain, dict) else f"{fmt(domain)} (constant)"
        print(f"    {clean(name):<14}{shown}")
    if objectives:
        print_pareto(objectives, x.get("pareto") or [])
    if (x.get("scheduler") or {}).get("type") in ("pbt", "pb2") and best:
        print_schedule(x, client.get_trial(best["trial_id"]))
    trials = client.list_trials(args.id, sort="value")
    if not trials:
        print("\nno trials yet")
        return EXIT_OK
    shown = trials[:SHOW_TRIALS]
    print(f"\ntrials ({'first ' if len(shown) < len(trials) else ''}{len(shown)} of "
          f"{len(trials)}, by best "
          f"{clean(objectives[0].get('name') if objectives else x.get('metric'))}):")
    print(trials_table(x, shown))
    return EXIT_OK


def cmd_cancel(client: Client, args: argparse.Namespace) -> int:
    x = client.cancel_experiment(args.id)
    print_state(x)
    running = (x.get("counts") or {}).get("running", 0)
    if running:
        print(f"{running} running trial{'' if running == 1 else 's'} will stop at their next "
              "report")
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


def cmd_best(client: Client, args: argparse.Namespace) -> int:
    from ..experiment import Experiment

    exp = Experiment.attach(args.id, client=client)
    result = exp.best(scope=args.scope)
    if args.json:
        print_json(None if result is None else {
            "trial_id": result.trial_id, "value": result.value, "step": result.step,
            "config": result.config})
        return EXIT_OK
    if result is None:
        print(f"experiment {args.id}: no trial has reported {clean(exp.metric)} yet",
              file=sys.stderr)
        return EXIT_OK
    print(f"trial {result.trial_id}: {clean(exp.metric)} {fmt(result.value)} at step "
          f"{fmt(result.step)}")
    for name, value in result.config.items():
        print(f"  {clean(name)}: {fmt(value)}")
    return EXIT_OK
