#!/usr/bin/env bash
# The dashboard with a large experiment: for each size of DASH_SIZES (50,000
# and 100,000 trials of 20 reports), bench/gen_store.py makes a store of one
# such experiment (once: cached under DASH_CACHE), and bench/dashboard.mjs
# serves it with a fresh rungd (serving web/), opens its page in headless
# Debian chromium three times and prints the median time from navigation
# start to the rendered experiment page, the interactions' times (hover,
# sort, filter, brush) and the bytes transferred, ending with the target
# lines:
#   target dashboard_render_50k_s: X (goal 1) ok|short
#   target dashboard_hover_ms: X (goal 100) ok|short   (sort, filter, brush)
#   target dashboard_bytes: N (...)
# then the same for 100k (goal 2 s).
#
# Usage: bash bench/dashboard.sh
# Knobs (environment): RUNG_BUILD (build directory, default build/; rungd is
# built there only when missing), DASH_SIZES ("50000 100000"), DASH_CACHE
# (the stores' folder, default $RUNG_BUILD/dash-stores), DASH_DB (one store
# to serve instead), DASH_SIZES=api: load DASH_TRIALS (10000) trials of
# DASH_REPORTS (20) reports through the HTTP API instead, with DASH_WORKERS
# (32 concurrent fake workers); DASH_RUNS (3), DASH_IDLE_S (5 s of polling
# measured after the render).
#
# Needs Debian's chromium and nodejs (scripts/deps.sh --tests) and web/node_modules
# (npm ci in web/, run here when missing). It only talks to 127.0.0.1,
# bounds its run in time, and stops what it started.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
export RUNGD=$BUILD/bin/rungd

if [[ ! -x $RUNGD ]]; then
    echo "# building rungd in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" >/dev/null
    cmake --build "$BUILD" -j2 --target rungd >/dev/null
fi
if [[ ! -d $ROOT/web/node_modules/playwright-core ]]; then
    echo "# installing web/'s packages (npm ci)"
    (cd "$ROOT/web" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >/dev/null)
fi
if [[ ! -x /usr/bin/chromium ]]; then
    echo "NOTE: no /usr/bin/chromium (apt-get install chromium, or bash scripts/deps.sh --tests)"
    echo "target dashboard_render_s: none (goal 1) short"
    exit 1
fi
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true); $(date -u +%Y-%m-%dT%H:%M:%SZ)"
SIZES=${DASH_SIZES:-50000 100000}
if [[ -n ${DASH_DB:-} || $SIZES == api ]]; then
    exec timeout --kill-after=10 900 node "$ROOT/bench/dashboard.mjs"
fi
CACHE=${DASH_CACHE:-$BUILD/dash-stores}
rc=0
for n in $SIZES; do
    echo "# store of $n trials x 20 reports (bench/gen_store.py, cached in $CACHE/$n)"
    /usr/bin/python3 "$ROOT/bench/gen_store.py" --rungd "$RUNGD" --cache-dir "$CACHE/$n" --experiments 1 \
        --trials "$n" --reports 20 --running 0 --canceled-every 0 | tail -n 1 | cut -c1-200
    DASH_DB=$CACHE/$n/store.db timeout --kill-after=10 900 node "$ROOT/bench/dashboard.mjs" || rc=1
done
exit $rc
