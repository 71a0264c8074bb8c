#!/usr/bin/env bash
# The Python client's latency to the first trial (bench/README.md, section
# 7): from `import rung` in a fresh Python process to the moment a worker
# has leased the first trial of the experiment that process submitted, over
# loopback. A real rungd on a temporary database and a real rung-worker
# (one CPU slot) already registered and waiting in a lease long poll; each
# run is a fresh /usr/bin/python3 that imports rung (python/ of this
# checkout), builds an Experiment (random searcher, 1 trial, a one-line
# shell trainable) and submits it. The end is the trial's `started_at`
# (rungd and the child share the machine's clock). Printed: `import rung`
# alone, the submit round trip, and import-to-lease, median and p90 over
# PYCLIENT_RUNS runs (20).
#
# The peer, interleaved run by run: a fresh /usr/bin/python3 that imports
# optuna, creates a study on a SQLite storage and asks its first trial
# (python3-optuna). The ratio Rung/Optuna of the median times to the first
# trial, one JSON line, and the target line (goal: median <= 100 ms). It
# never fails because of the figures: the exit status is non-zero only on
# an error. bench/python_client.py has the details.
#
# Usage: bash bench/python_client.sh           (about 30 s)
# Knobs (environment): PYCLIENT_RUNS (20), RUNG_BUILD (build directory,
# default build/; rungd and rung-worker are built there when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${RUNG_BUILD:-$ROOT/build}
RUNGD=$BUILD/bin/rungd
WORKER=$BUILD/bin/rung-worker
PY=/usr/bin/python3
RUNS=${PYCLIENT_RUNS:-20}

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || {
    echo "python_client: PYCLIENT_RUNS must be a positive integer, not '$RUNS'" >&2
    exit 2
}
[[ -x $PY ]] || { echo "python_client: $PY is missing (Debian python3)" >&2; exit 2; }

bench_start python_client

echo "== python client: import rung -> first trial leased, against Optuna =="
print_host

need_daemon python_client
print_build "$BUILD" "$RUNGD"
if ! "$PY" -c "import optuna" 2>/dev/null; then
    note "$PY cannot import optuna (apt-get install python3-optuna): Rung is measured alone"
fi
echo

export TMPDIR=$TMP # rungd's database, the worker's folder and Optuna's SQLite file
if ! run_bounded "$TMP/out" $((RUNS * 30 + 120)) "$PY" "$ROOT/bench/python_client.py" \
    --rungd "$RUNGD" --worker "$WORKER" --python "$PY" --pythonpath "$ROOT/python" \
    --runs "$RUNS"; then
    echo "python_client: the run failed (see above)" >&2
    exit 1
fi
print_notes
echo
echo "== JSON =="
grep '^{' "$TMP/out" || true
echo
echo "== targets (measured against the goal; repeated from above) =="
grep '^target ' "$TMP/out" || true
