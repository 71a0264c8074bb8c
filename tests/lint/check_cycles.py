#!/usr/bin/python3
"""No file cycle in the daemon (server/) or the worker (worker/) (issue 35).

A module is x.c with x.h (x_internal.h is the module x too); module a
depends on module b when a's .c or .h includes "b.h" of the same folder. A
cycle (a strongly connected set of more than one module) means that no
module of it can be read, changed or tested alone. This builds both
graphs and fails on any cycle, printing one of its loops.

PENDING lists the cycles that existed when this check was added: allowed
for now. A cycle not listed fails; so does a listed one that no longer
exists as listed (update the list: it only shrinks).

Usage: check_cycles.py [REPO_ROOT]"""
import os
import re
import sys

from lintgraph import cycles

DIRS = ("server", "worker")

# The cycles found when this check was added, by folder: each a set of
# modules.
PENDING = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)\.h"', re.M)


def module_of(filename):
    base = filename.rsplit(".", 1)[0]
    return base[:-len("_internal")] if base.endswith("_internal") else base


def graph(folder):
    """{module: set of modules it includes} of one folder."""
    files = [f for f in os.listdir(folder) if f.endswith((".c", ".h"))]
    headers = {f[:-2] for f in files if f.endswith(".h")}
    g = {}
    for f in sorted(files):
        m = module_of(f)
        g.setdefault(m, set())
        text = open(os.path.join(folder, f), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            if inc in headers and module_of(inc + ".h") != m:
                g[m].add(module_of(inc + ".h"))
    return g


def loop(g, comp):
    """One loop through a cycle's modules, as 'a -> b -> a'."""
    start = min(comp)
    path, seen = [start], {start}
    while True:
        nxt = sorted(w for w in g[path[-1]] if w in comp)
        back = [w for w in nxt if w == start]
        fresh = [w for w in nxt if w not in seen]
        if back and (len(path) > 1):
            return " -> ".join(path + [start])
        if not fresh:
            # Close the loop at the first module seen again.
            w = nxt[0]
            return " -> ".join(path[path.index(w):] + [w])
        path.append(fresh[0])
        seen.add(fresh[0])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad, n_pending = [], 0
    for d in DIRS:
        g = graph(os.path.join(root, d))
        found = cycles(g)
        pending = [frozenset(p) for p in PENDING.get(d, ())]
        n_pending += len(pending)
        for comp in found:
            where = "%s/: cycle of %s: %s" % (d, ", ".join(sorted(comp)), loop(g, comp))
            if comp in pending:
                print("pending: " + where)
            else:
                bad.append(where)
        for p in pending:
            if p not in found:
                bad.append("%s/: the cycle of %s no longer exists as listed: update PENDING in "
                           "tests/lint/check_cycles.py" % (d, ", ".join(sorted(p))))
    print("check_cycles: %d pending cycles" % n_pending)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
