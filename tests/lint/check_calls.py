#!/usr/bin/python3
"""No call cycle between the files of the daemon or the worker (issue 35).

check_cycles.py reads the #include lines, where a header implemented by
several files (core.h by the Core's family) hides who calls whom. This
reads the built object files instead: file a calls file b when a's object
uses a global symbol that b's object defines (nm), in server/ (rungd and
its libraries) and in worker/ (rung-worker and its libraries). A cycle (a
strongly connected set of more than one file) fails, with the calls that
make it.

It also checks that the Core's kernel (server/core_kernel.c: lifecycle,
states, retries, completion) calls no scheduler: nothing of the
schedulers' files (sched_*.c but sched_ops.c, which attaches them), of
their rules (asha.c, pbt.c) or of what they sample (pb2_*, space_mutate);
they plug in through the hook table (issue 35).

PENDING lists the cycles that existed when this check was added: allowed
for now. A cycle not listed fails; so does a listed one that no longer
exists as listed (update the list: it only shrinks).

Usage: check_calls.py BUILD_DIR (after building rungd and rung-worker)"""
import glob
import os
import subprocess
import sys

from lintgraph import cycles

DIRS = ("server", "worker")

# The cycles found when this check was added, by folder: each a set of
# files (without .c).
PENDING = {}


def symbol_table(build, folder):
    """{file: (global symbols defined, used)} of one folder's objects (one
    nm for all: its -A lines are "OBJECT:VALUE TYPE NAME" or "OBJECT: U
    NAME")."""
    objs = sorted(glob.glob(os.path.join(build, folder, "CMakeFiles", "*.dir", "*.c.o")))
    if not objs:
        return {}
    out = subprocess.run(["nm", "-A"] + objs, capture_output=True, text=True, check=True).stdout
    defined, used = {}, {}
    for line in out.splitlines():
        obj, _, rest = line.partition(":")
        name = os.path.basename(obj)[:-len(".c.o")]
        parts = rest.split()
        defined.setdefault(name, set())
        used.setdefault(name, set())
        if len(parts) == 3 and parts[1] in "TDBRGSVWC":
            defined[name].add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used[name].add(parts[1])
    return {f: (defined[f], used[f]) for f in defined}


def graph(table):
    """{file: set of files it calls}."""
    owner = {}
    for name, (syms, _) in table.items():
        for sym in syms:
            owner[sym] = name
    return {f: {owner[x] for x in used if x in owner and owner[x] != f}
            for f, (_, used) in table.items()}


KERNEL = "core_kernel"
SCHEDULER_FILES = ("asha", "pbt")
SCHEDULER_PREFIXES = ("asha_", "pbt_", "pb2_", "space_mutate")


def kernel_calls(table):
    """What the kernel calls of the schedulers, as 'file.c: symbol'."""
    if KERNEL not in table:
        return None
    owner = {}
    for name, (syms, _) in table.items():
        for sym in syms:
            owner[sym] = name
    out = []
    for sym in sorted(table[KERNEL][1]):
        f = owner.get(sym)
        sched = f is not None and (f in SCHEDULER_FILES or
                                   (f.startswith("sched_") and f != "sched_ops"))
        if sched or sym.startswith(SCHEDULER_PREFIXES):
            out.append("%s.c: %s" % (f or "?", sym))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_calls.py BUILD_DIR")
    build = sys.argv[1]
    bad, n_pending = [], 0
    for d in DIRS:
        table = symbol_table(build, d)
        g = graph(table)
        if not g:
            bad.append("%s/: no object files under %s: build rungd and rung-worker first"
                       % (d, os.path.join(build, d)))
            continue
        found = cycles(g)
        pending = [frozenset(p) for p in PENDING.get(d, ())]
        n_pending += len(pending)
        for comp in found:
            calls = "; ".join("%s.c -> %s" % (a, ", ".join(sorted(b for b in g[a] if b in comp)))
                              for a in sorted(comp))
            where = "%s/: call cycle of %s (%s)" % (d, ", ".join(sorted(comp)), calls)
            if comp in pending:
                print("pending: " + where)
            else:
                bad.append(where)
        if d == "server":
            calls = kernel_calls(table)
            if calls is None:
                bad.append("server/%s.c: not built (renamed? update KERNEL in "
                           "tests/lint/check_calls.py)" % KERNEL)
            elif calls:
                bad.append("server/%s.c calls the schedulers: %s" % (KERNEL, "; ".join(calls)))
            else:
                print("server/%s.c calls no scheduler" % KERNEL)
        for p in pending:
            if p not in found:
                bad.append("%s/: the call cycle of %s no longer exists as listed: update PENDING "
                           "in tests/lint/check_calls.py" % (d, ", ".join(sorted(p))))
    print("check_calls: %d pending call cycles" % n_pending)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
