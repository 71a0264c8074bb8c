"""Pieces of `show` that stand apart from its request (cli/view.c): the
trials table with its parameter columns and a gang's members, the PBT
schedule of a trial, the Pareto front, and an experiment's state in a line.
"""

from __future__ import annotations

from typing import Any, Sequence

from .fmt import clean, cut, done, fmt
from .table import table

MEMBERS_WIDTH = 32  # a gang's worker ids in `show`; up to 64 nodes would fill a line
SPACE_DEPTH_MAX = 8  # sub-spaces nest 8 levels deep at most (docs/api.md, "search_space")
PARAM_WIDTH = 16  # a parameter's value (and name) in the trials table, as the C client's
ERROR_WIDTH = 60  # the first line of a trial's error in the trials table


def nodes(x: dict) -> int:
    """resources_per_trial.nodes: how many workers run each trial together
    (docs/api.md, "Gangs"); 1 when absent."""
    n = (x.get("resources_per_trial") or {}).get("nodes", 1)
    return n if isinstance(n, int) else 1


def members(t: dict) -> str:
    """"3,4": a running gang trial's members' worker ids, by rank; "" for
    any other trial (one that is not running keeps its last gang for
    inspection, naming workers that no longer run it)."""
    gang = t.get("gang")
    if t.get("state") != "running" or not isinstance(gang, dict):
        return ""
    ms = [m for m in gang.get("members") or [] if isinstance(m, dict)]
    ms.sort(key=lambda m: m.get("rank", 0))
    return cut(",".join(fmt(m.get("worker_id")) for m in ms), MEMBERS_WIDTH)


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


def param_columns(space: Any, trials: Sequence[dict]) -> list[str]:
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


def trials_table(x: dict, shown: Sequence[dict]) -> str:
    """The trials of `show` (cli_view_trials): id, number, state, for a gang
    experiment its nodes and who runs a running trial, the best value and
    step, a column per parameter, warnings and the error's first line."""
    params = param_columns(x.get("search_space"), shown)
    gang = nodes(x) > 1
    rows = []
    for t in shown:
        warn = (t.get("warnings") or {}).get("count", 0)
        error = clean((t.get("error") or "").split("\n", 1)[0])
        config = t.get("config") or {}
        rows.append([str(t["id"]), str(t.get("number")), clean(t.get("state"))]
                    + ([fmt(t.get("nodes", nodes(x))), members(t)] if gang else [])
                    + [fmt((t.get("best") or {}).get("value")), fmt(t.get("step"))]
                    + [cut(fmt(config[p]), PARAM_WIDTH) if p in config else "" for p in params]
                    + [str(warn) if warn else "", cut(error, ERROR_WIDTH)])
    right = (0, 1, 3, 5, 6) if gang else (0, 1, 3, 4)
    return table(["TRIAL", "#", "STATE"] + (["NODES", "MEMBERS"] if gang else [])
                 + ["BEST", "STEP"] + [cut(clean(p), PARAM_WIDTH) for p in params]
                 + ["WARN", "ERROR"], rows, right=right)


def print_schedule(x: dict, trial: dict) -> None:
    """pbt (docs/schedulers.md): the schedule a trial was trained with, the
    mutated parameters from step 1 and from each exploit on, as rung show."""
    sched = x.get("scheduler") or {}
    mutations = sched.get("hyperparam_mutations") or sched.get("hyperparam_bounds") or {}
    lineage = trial.get("lineage") or []

    def values(config: dict) -> str:
        return ", ".join(f"{clean(k)} {fmt((config or {}).get(k))}" for k in mutations)

    n = len(lineage)
    print(f"schedule of trial {trial.get('id')} ({n} exploit{'' if n == 1 else 's'}):")
    print("  from step 1: " + values(lineage[0].get("from") if lineage else trial.get("config")))
    for e in lineage:
        print(f"  from step {e.get('step', 0) + 1} (trial {e.get('donor')}'s checkpoint of step "
              f"{e.get('donor_step')}): " + values(e.get("config")))


def print_pareto(objectives: list, pareto: list) -> None:
    """The Pareto front, a trial a line with each objective's value."""
    if not pareto:
        print("pareto front: none yet")
        return
    print(f"pareto front ({len(pareto)} trials):")
    for p in pareto:
        values = p.get("values") or {}
        shown = ", ".join(f"{clean(m.get('name'))} {fmt(values.get(m.get('name')))}"
                          for m in objectives)
        config = ", ".join(f"{clean(k)}={fmt(v)}" for k, v in (p.get("config") or {}).items())
        print(f"  trial {p.get('trial_id')}: {shown}  config: {config or '-'}")


def print_state(x: dict) -> None:
    """"experiment 3: paused (5/20 done, 2 running)", after a verb."""
    counts = x.get("counts") or {}
    print(f"experiment {x['id']}: {clean(x.get('state'))} "
          f"({done(counts)}/{x.get('total_trials')} done, {counts.get('running', 0)} running)")
