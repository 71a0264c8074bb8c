#!/usr/bin/python3
"""No file of the daemon (server/) or the worker (worker/) over 800 lines
(issue 35: one concept a file; a room that grows past this is split by
concept, as core.c, http.c, api.c and worker/trial.c were).

ALLOWED names a file that may be longer, with why (a single concept); the
check fails on a file over the limit not listed, and on a listed one that
is no longer over it (so the list stays true).

Usage: check_sizes.py [REPO_ROOT]"""
import os
import sys

DIRS = ("server", "worker")
LIMIT = 800

# "folder/file": why it is one concept at that length.
ALLOWED = {}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad, sizes = [], []
    for d in DIRS:
        for name in sorted(os.listdir(os.path.join(root, d))):
            if not name.endswith((".c", ".h")):
                continue
            path = d + "/" + name
            with open(os.path.join(root, path), encoding="utf-8") as f:
                n = sum(1 for _ in f)
            sizes.append((n, path))
            if n > LIMIT and path not in ALLOWED:
                bad.append("%s: %d lines, over %d: split it by concept (or list it in ALLOWED "
                           "in tests/lint/check_sizes.py with why)" % (path, n, LIMIT))
            elif n <= LIMIT and path in ALLOWED:
                bad.append("%s: %d lines, no longer over %d: take it out of ALLOWED"
                           % (path, n, LIMIT))
    for path in sorted(set(ALLOWED) - {p for _, p in sizes}):
        bad.append("%s: gone: take it out of ALLOWED" % path)
    n, path = max(sizes)
    print("check_sizes: %d files, the longest %s (%d lines), %d allowed over %d"
          % (len(sizes), path, n, len(ALLOWED), LIMIT))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
