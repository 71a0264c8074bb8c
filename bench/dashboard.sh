#!/usr/bin/env bash
# The dashboard with a large experiment: bench/dashboard.mjs starts a fresh
# rungd on a fresh database (serving web/), loads one experiment with 10,000
# trials and 200,000 metric rows through the HTTP API, then opens its page in
# headless Debian chromium three times and prints the median time from
# navigation start to the rendered experiment page and the bytes transferred,
# ending with the target lines:
#   target dashboard_render_s: X (goal 1) ok|short
#   target dashboard_bytes: N (...)
#
# Usage: bash bench/dashboard.sh
# Knobs (environment): RUNG_BUILD (build directory, default build/; rungd is
# built there only when missing), DASH_DB (a store to serve instead of
# loading one: bench/gen_store.py), DASH_TRIALS (10000), DASH_REPORTS (20),
# DASH_WORKERS (32 concurrent fake workers), DASH_RUNS (3), DASH_IDLE_S (5 s
# of polling measured after the render).
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
exec timeout --kill-after=10 900 node "$ROOT/bench/dashboard.mjs"
