#!/usr/bin/env python3
"""sampler_pair: are two searchers' regrets different, seed by seed?

    python3 bench/sampler_pair.py A.json B.json [--at 50,100] [--unpaired]

A and B are the output of `sampler_quality --json` (or of
bench/optuna_quality.py --json): the JSON lines carry each seed's regret at
25, 50 and 100 evaluations (regret_25, ...). For every (function, searcher
label) present in both, and every checkpoint, it prints the two medians and
third quartiles and:

- paired (the default, for two builds or settings of rung on the same
  seeds): on how many seeds B did better and worse than A, the two-sided
  sign test's p-value, and the geometric mean of B/A;
- --unpaired (for two different tools, whose seed k has nothing to do with
  each other's): the Mann-Whitney U test's two-sided p-value (normal
  approximation with the tie correction) and the probability that B's
  regret is below A's on a random pair.

Why: on these functions a bayes run is chaotic in its last bits (a kernel's
rounding moves one seed's regret by orders of magnitude), so the median of
20 seeds moves by up to 50% with no change of method (docs/searchers.md).
A change is judged on the same 100 seeds, pair by pair.
"""
import argparse
import json
import math
import statistics
import sys


def load(path):
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            if j.get("failed") or "function" not in j:
                continue
            rows[(j["function"], j.get("label", "?"))] = j
    return rows


def q3(v):
    """The third quartile, interpolated as numpy's default does."""
    return statistics.quantiles(v, n=4, method="inclusive")[2] if len(v) > 1 else v[0]


def sign_test(wins, losses):
    """Two-sided exact binomial p-value of wins against losses (ties out)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def mann_whitney(a, b):
    """(two-sided p, P(b < a)) by the normal approximation with ties."""
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        r = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[k] = r
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    na, nb = len(a), len(b)
    rb = sum(r for r, (_, g) in zip(ranks, pooled) if g == 1)
    u_b = rb - nb * (nb + 1) / 2.0  # pairs where b's value is above a's
    n = na + nb
    mean = na * nb / 2.0
    var = na * nb / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    z = 0.0 if var <= 0 else (abs(u_b - mean) - 0.5) / math.sqrt(var)
    p = math.erfc(max(z, 0.0) / math.sqrt(2.0))
    return min(1.0, p), 1.0 - u_b / (na * nb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--at", default="50,100", help="checkpoints, e.g. 25,50,100")
    ap.add_argument("--unpaired", action="store_true",
                    help="different tools: Mann-Whitney instead of the sign test")
    args = ap.parse_args()
    try:
        checkpoints = [int(x) for x in args.at.split(",")]
    except ValueError:
        sys.exit(f"sampler_pair: --at must be numbers separated by commas, not '{args.at}'")
    a, b = load(args.a), load(args.b)
    keys_a = sorted(a)
    if not args.unpaired:
        common = [(k, k) for k in keys_a if k in b]
    else:
        # Different tools have different labels: each of A's rows against
        # each of B's for the same function.
        common = [(ka, kb) for ka in keys_a for kb in sorted(b) if kb[0] == ka[0]]
    if not common:
        sys.exit("sampler_pair: the two files have no function (and label) in common")
    print(f"A = {args.a}\nB = {args.b}")
    for ka, kb in common:
        for at in checkpoints:
            key = f"regret_{at}"
            if key not in a[ka] or key not in b[kb]:
                continue
            ra, rb = a[ka][key], b[kb][key]
            head = (f"{ka[0]:<12} @{at:<4} median {statistics.median(ra):.3g} -> "
                    f"{statistics.median(rb):.3g}, q3 {q3(ra):.3g} -> {q3(rb):.3g}")
            if args.unpaired:
                p, below = mann_whitney(ra, rb)
                print(f"{head}; {ka[1]} ({len(ra)} seeds) against {kb[1]} ({len(rb)}); "
                      f"P(B < A) {below:.2f}, Mann-Whitney p {p:.3g}")
                continue
            n = min(len(ra), len(rb))
            if len(ra) != len(rb):
                print(f"# {ka[0]}: {len(ra)} and {len(rb)} seeds; the first {n} are paired")
            pairs = list(zip(ra[:n], rb[:n]))
            wins = sum(1 for x, y in pairs if y < x)
            losses = sum(1 for x, y in pairs if y > x)
            tiny = 1e-300  # a regret of exactly 0 (the optimum found)
            gm = math.exp(sum(math.log((y + tiny) / (x + tiny)) for x, y in pairs) / n)
            print(f"{head}; B better on {wins} of {n} seeds, worse on {losses} "
                  f"(sign test p {sign_test(wins, losses):.3g}); geometric mean B/A {gm:.3g}")


if __name__ == "__main__":
    main()
