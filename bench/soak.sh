#!/usr/bin/env bash
# Soak: rungd's memory and throughput over a long steady load. A real rungd
# on a fresh temporary database, real rung-worker processes with 32 CPU
# slots in all, each trial a POSIX shell one-liner that prints 5 `@rung
# {"step": n, "loss": x}` lines 0.06 s apart (about 0.3 s, more on a loaded
# host), and a stream of random-search experiments of SOAK_TRIALS_PER_EXP
# trials, a new one submitted whenever fewer than SOAK_IN_FLIGHT run, so
# that the total is unbounded. Every SOAK_SAMPLE_S seconds it samples
# rungd's VmRSS/VmHWM, its CPU, and trials finished and reports from
# /metrics, and prints a row. A latency probe (its own process and
# keep-alive connection) GETs /api/v1/experiments/{id} of the newest
# experiment every 50 ms, as a dashboard polls: each row gives its p50, p99
# and max over the interval. At the end: RSS after the first minute against
# the end (% change), trials/s in the first minute against the last
# (windows of a third of the run when it is shorter than 3 minutes), and
# the probe's p50/p99/max over the whole soak (goal: p99 <= 20 ms). It
# prints figures and target lines; its exit status is non-zero only on an
# error (a daemon or worker that dies, a failed request), never because a
# target is missed.
#
# Usage: bash bench/soak.sh                 (10 minutes)
#        SOAK_S=60 bash bench/soak.sh       (a quick check)
# Knobs (environment): SOAK_S (600), SOAK_SLOTS (32), SOAK_WORKERS (1: the
# slots are split among them), SOAK_TRIALS_PER_EXP (3000), SOAK_IN_FLIGHT
# (2), SOAK_SAMPLE_S (10), RUNG_BUILD (build directory, default build/;
# built there when rungd or rung-worker is missing).
#
# It only talks to 127.0.0.1, bounds every wait, and on any exit stops the
# workers (SIGTERM, then SIGKILL) and rungd and removes its temp files.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${RUNG_BUILD:-$ROOT/build}
RUNGD=$BUILD/bin/rungd
WORKER=$BUILD/bin/rung-worker
PY=/usr/bin/python3
SOAK_S=${SOAK_S:-600}
SLOTS=${SOAK_SLOTS:-32}
WORKERS=${SOAK_WORKERS:-1}
TRIALS_PER_EXP=${SOAK_TRIALS_PER_EXP:-3000}
IN_FLIGHT=${SOAK_IN_FLIGHT:-2}
SAMPLE_S=${SOAK_SAMPLE_S:-10}

for v in SOAK_S SLOTS WORKERS TRIALS_PER_EXP IN_FLIGHT SAMPLE_S; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "soak: $v must be a positive integer, not '${!v}'" >&2
        exit 2
    }
done
[[ -x $PY ]] || { echo "soak: $PY is missing (Debian python3)" >&2; exit 2; }

bench_start soak

echo "== soak: rungd's RSS and throughput over ${SOAK_S} s =="
print_host

need_daemon soak
print_build "$BUILD" "$RUNGD"
echo

export TMPDIR=$TMP # probe.py's folder (the workers' trial folders) goes in $TMP too
if ! run_bounded "$TMP/probe.out" $((SOAK_S + 300)) "$PY" "$ROOT/bench/probe.py" soak \
    --rungd "$RUNGD" --worker "$WORKER" --seconds "$SOAK_S" --slots "$SLOTS" \
    --workers "$WORKERS" --trials-per-exp "$TRIALS_PER_EXP" --in-flight "$IN_FLIGHT" \
    --sample-s "$SAMPLE_S"; then
    echo "soak: the run failed (see above)" >&2
    exit 1
fi
echo
echo "== JSON =="
grep '^{' "$TMP/probe.out" || true
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== targets (measured against the goal; repeated from above) =="
grep '^target ' "$TMP/probe.out" || true
