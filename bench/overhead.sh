#!/usr/bin/env bash
# Overhead on short trials (bench/README.md, "Overhead on short trials"): a
# real rungd on loopback and one real rung-worker with OVERHEAD_SLOTS CPU
# slots run OVERHEAD_TRIALS trials of a shell one-liner that sleeps D
# seconds, for each D in OVERHEAD_LENGTHS; the wall time against the ideal
# ceil(trials / slots) * D, and where the time goes per trial (lease to
# start, the program beyond D, its end to rungd's finish, a slot's wait for
# its next lease). bench/overhead_bench.py drives it. Prints, never judges:
# the exit status is non-zero only on an error.
#
# Usage: bash bench/overhead.sh
# Knobs (environment): OVERHEAD_TRIALS (480), OVERHEAD_SLOTS (16),
# OVERHEAD_LENGTHS (1,0.2: seconds), RUNG_BUILD (build directory, default
# build/; rungd and rung-worker are built there when missing). Cost: about
# 40 s at the defaults.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${RUNG_BUILD:-$ROOT/build}
RUNGD=$BUILD/bin/rungd
WORKER=$BUILD/bin/rung-worker
PY=/usr/bin/python3
TRIALS=${OVERHEAD_TRIALS:-480}
SLOTS=${OVERHEAD_SLOTS:-16}
LENGTHS=${OVERHEAD_LENGTHS:-1,0.2}

for v in TRIALS SLOTS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "overhead: OVERHEAD_$v must be a positive whole number, not '${!v}'" >&2
        exit 2
    }
done
[[ $LENGTHS =~ ^[0-9]*\.?[0-9]+(,[0-9]*\.?[0-9]+)*$ ]] || {
    echo "overhead: OVERHEAD_LENGTHS must be seconds separated by commas, not '$LENGTHS'" >&2
    exit 2
}

bench_start overhead
need_daemon overhead

echo "== overhead: $TRIALS trials of D seconds on $SLOTS slots, D in $LENGTHS =="
print_host
print_build "$BUILD" "$RUNGD"
echo

export TMPDIR=$TMP
if ! run_bounded "$TMP/out" 1800 "$PY" "$ROOT/bench/overhead_bench.py" --rungd "$RUNGD" \
    --worker "$WORKER" --trials "$TRIALS" --slots "$SLOTS" --lengths "$LENGTHS"; then
    echo "overhead: the run failed (see above)" >&2
    exit 1
fi
echo
echo "== JSON =="
grep '^{' "$TMP/out" || true
