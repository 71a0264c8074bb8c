#!/usr/bin/env bash
# rungd on a large store: start-up time, memory and listing latency with
# 1,000,000 finished trials and 10,000,000 reports in SQLite. It prints
# figures and target lines (measured against the goal); its exit status is
# non-zero only on an error (a failed generation, a daemon that does not
# start or dies), never because a target is missed.
#
#  1. bench/gen_store.py makes the store once and caches it: 1,000 finished
#     experiments (every 50th canceled) x 1,000 trials (completed, stopped,
#     failed with realistic errors, canceled) x 10 reports, 40 workers, 2
#     running experiments with finished, running and pending trials. The
#     current rungd applies its migrations to the new file first, and checks
#     the experiment templates; rows go in with Python's sqlite3 in one
#     transaction, with the summaries schema 004 keeps with each row (a
#     trial's last and best values, an experiment's counts and best) filled
#     as rungd writes them. A few minutes and 1-2 GB; done again when the
#     cache is missing or its knobs, the generator or the templates this
#     rungd can load changed.
#  2. bench/probe.py scale: one untimed start (a newer rungd's migrations,
#     page cache), STORE_SCALE_RUNS timed starts (exec to /healthz 200; VmRSS
#     and VmHWM then), then one run that sends STORE_SCALE_REQUESTS requests
#     over keep-alive to each listing endpoint (experiments, experiment,
#     trials with offsets, sort=value and state=, trials.csv, curves, trial,
#     metrics, workers; old, newest and running experiments, and rotations
#     over 200 experiments) and prints p50/p99/max per endpoint, with RSS
#     before and after. rungd runs with --lease-s 3600 so that no lease of the
#     store's running trials expires while it is measured.
#
# Usage: bash bench/store_scale.sh
# Knobs (environment): STORE_SCALE_DIR (cache folder, kept between runs;
# default ${TMPDIR:-/tmp}/rung-store-scale; remove it to reclaim the space),
# STORE_SCALE_REGEN=1 (regenerate even when cached), STORE_SCALE_EXPERIMENTS
# (1000), STORE_SCALE_TRIALS (1000, a multiple of 100), STORE_SCALE_REPORTS
# (10), STORE_SCALE_RUNS (5), STORE_SCALE_REQUESTS (200),
# STORE_SCALE_START_TIMEOUT_S (600: a start slower than this is an error),
# RUNG_BUILD (build directory, default build/; built there when rungd is
# missing).
#
# It only talks to 127.0.0.1, bounds every wait, and on any exit stops what
# it started (the cache folder stays).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${RUNG_BUILD:-$ROOT/build}
RUNGD=$BUILD/bin/rungd
PY=/usr/bin/python3
CACHE=${STORE_SCALE_DIR:-${TMPDIR:-/tmp}/rung-store-scale}
EXPERIMENTS=${STORE_SCALE_EXPERIMENTS:-1000}
TRIALS=${STORE_SCALE_TRIALS:-1000}
REPORTS=${STORE_SCALE_REPORTS:-10}
RUNS=${STORE_SCALE_RUNS:-5}
REQUESTS=${STORE_SCALE_REQUESTS:-200}
START_TIMEOUT_S=${STORE_SCALE_START_TIMEOUT_S:-600}
GEN_TIMEOUT_S=3600
# Every start may take START_TIMEOUT_S, every endpoint 120 s (30 of them).
PROBE_TIMEOUT_S=$(((RUNS + 2) * (START_TIMEOUT_S + 70) + 30 * 120 + 300))

for v in EXPERIMENTS TRIALS REPORTS RUNS REQUESTS START_TIMEOUT_S; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "store_scale: STORE_SCALE_$v must be a positive integer, not '${!v}'" >&2
        exit 2
    }
done
[[ -x $PY ]] || { echo "store_scale: $PY is missing (Debian python3)" >&2; exit 2; }

bench_start store_scale

echo "== store_scale: rungd on a large store =="
print_host

if [[ ! -x $RUNGD ]]; then
    echo "# building rungd in $BUILD"
    run_bounded "$TMP/build.out" 900 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo ||
        tail -20 "$TMP/build.out"
    run_bounded "$TMP/build.out" 900 cmake --build "$BUILD" -j2 --target rungd ||
        tail -20 "$TMP/build.out"
fi
if [[ ! -x $RUNGD ]]; then
    echo "store_scale: no $RUNGD; build it with: cmake -S . -B build && cmake --build build -j2" >&2
    exit 1
fi
print_build "$BUILD" "$RUNGD"

mkdir -p "$CACHE"
if [[ ! -f $CACHE/store.db || ${STORE_SCALE_REGEN:-0} == 1 ]]; then
    free_kb=$(df -Pk "$CACHE" | awk 'NR == 2 { print $4 }')
    need_kb=$((EXPERIMENTS * TRIALS * REPORTS * 300 / 1024 + 1024 * 1024))
    if ((free_kb < need_kb)); then
        echo "store_scale: $CACHE has $((free_kb / 1024)) MB free; the store needs about" \
            "$((need_kb / 1024)) MB (set STORE_SCALE_DIR elsewhere)" >&2
        exit 1
    fi
fi

echo
echo "# store in $CACHE (generated once, then cached)"
gen_args=(--rungd "$RUNGD" --cache-dir "$CACHE" --experiments "$EXPERIMENTS"
    --trials "$TRIALS" --reports "$REPORTS")
[[ ${STORE_SCALE_REGEN:-0} == 1 ]] && gen_args+=(--force)
if ! run_bounded "$TMP/gen.out" "$GEN_TIMEOUT_S" "$PY" "$ROOT/bench/gen_store.py" "${gen_args[@]}"; then
    echo "store_scale: generating the store failed (see above)" >&2
    exit 1
fi
gen=$(grep -m1 '^{' "$TMP/gen.out" || true)
"$PY" - "$gen" <<'EOF'
import json, sys
g = json.loads(sys.argv[1])
how = ("generated in %.1f s" % g["seconds"]) if g.get("generated") else \
      ("cached (generated in %.1f s)" % g.get("seconds", 0))
print("store: %s; %.2f GB; %d experiments, %d trials (%d finished), %d reports, %d workers; "
      "templates %s" % (how, g["bytes"] / 1e9, g["experiments_total"], g["trials_total"],
                        g["finished_trials"], g["reports_total"], g["workers_total"],
                        ", ".join(g.get("templates", []))))
for n in g.get("template_notes", []) + ["column " + c for c in g.get("unknown_columns", [])]:
    print("NOTE: " + n)
EOF

echo
echo "# rungd on it: $RUNS timed starts, then $REQUESTS requests per listing endpoint"
if ! run_bounded "$TMP/probe.out" "$PROBE_TIMEOUT_S" "$PY" "$ROOT/bench/probe.py" scale \
    --rungd "$RUNGD" --db "$CACHE/store.db" --runs "$RUNS" --requests "$REQUESTS" \
    --start-timeout "$START_TIMEOUT_S"; then
    echo "store_scale: the measurement failed (see above)" >&2
    exit 1
fi
echo
echo "== JSON =="
echo "$gen"
grep '^{' "$TMP/probe.out" || true
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== targets (measured against the goal; repeated from above) =="
grep '^target ' "$TMP/probe.out" || true
