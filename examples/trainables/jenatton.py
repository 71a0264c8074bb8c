#!/usr/bin/env python3
"""The tree-structured function of Jenatton et al. (2017, "Bayesian
optimization with tree-structured dependencies", ICML) as a Rung command
trainable, for the conditional space of examples/jenatton-bayes.json:

    x1 = 0, x2 = 0:  x4^2 + 0.1 + r8        x1 = 1, x3 = 0:  x6^2 + 0.3 + r9
    x1 = 0, x2 = 1:  x5^2 + 0.2 + r8        x1 = 1, x3 = 1:  x7^2 + 0.4 + r9

with x4 ... x7 in [-1, 1] and r8, r9 in [0, 1]; the minimum is 0.1 (x1 = x2
= 0, x4 = 0, r8 = 0). The config comes from RUNG_CONFIG (set by rung-worker),
flat with dotted keys: tree.x1, tree.r8, tree.left.x2, tree.left.x4, ...
It reports `loss` once.
"""
import json
import os
import sys


def jenatton(c):
    """The function of a flat config (tree.* keys, only the active ones)."""
    if c["tree.x1"] == 0:
        left = c["tree.left.x2"] == 0
        x = c["tree.left.x4"] if left else c["tree.left.x5"]
        return x * x + (0.1 if left else 0.2) + c["tree.r8"]
    left = c["tree.right.x3"] == 0
    x = c["tree.right.x6"] if left else c["tree.right.x7"]
    return x * x + (0.3 if left else 0.4) + c["tree.r9"]


def main():
    config = json.loads(os.environ.get("RUNG_CONFIG") or "{}")
    try:
        value = jenatton(config)
    except KeyError as e:
        sys.exit("jenatton.py: RUNG_CONFIG lacks %s" % e)
    print("@rung " + json.dumps({"loss": value}), flush=True)


if __name__ == "__main__":
    main()
