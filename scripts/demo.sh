#!/usr/bin/env bash
# Sets up and runs the main job: installs the Debian packages, builds, starts
# rungd on 127.0.0.1:${RUNG_PORT:-8080} with its SQLite file rung-demo.db and
# a local rung-worker (2 CPU slots), submits examples/fmnist-builtin.json (16
# trials of rung-train, the built-in trainer, on Fashion-MNIST: Bayesian
# search, ASHA stops the poor ones early), follows it with `rung watch` until it
# completes, and prints the dashboard's address. rungd and the worker keep
# running until Ctrl-C; `--once` stops them when the experiment is done.
set -euo pipefail
cd "$(dirname "$0")/.."

once=0
[ "${1:-}" = "--once" ] && once=1
port=${RUNG_PORT:-8080}
server="http://127.0.0.1:$port"
export RUNG_SERVER="$server"

bash scripts/deps.sh
(cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund) # the charts (uPlot)
echo "demo: building (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

logs=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT

build/bin/rungd --port "$port" --db rung-demo.db >"$logs/rungd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  grep -q "listening on" "$logs/rungd.log" && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    cat "$logs/rungd.log"
    echo "demo: rungd did not start (is port $port taken? set RUNG_PORT)" >&2
    exit 1
  fi
  sleep 0.1
done
grep "listening on" "$logs/rungd.log"

build/bin/rung-worker --gpus none --cpu-slots 2 --workdir rung-demo-worker \
  >"$logs/worker.log" 2>&1 &
pids+=($!)
echo "demo: rung-worker started (2 CPU slots, trial folders in rung-demo-worker/)"

id=$(build/bin/rung submit -q examples/fmnist-builtin.json)
echo "demo: submitted experiment $id (examples/fmnist-builtin.json)"
build/bin/rung watch "$id"
echo "demo: CSV: build/bin/rung export $id  (or $server/api/v1/experiments/$id/trials.csv)"
echo "demo: dashboard: $server/"
if [ "$once" = 1 ]; then
  exit 0
fi
echo "demo: rungd and the worker keep running; press Ctrl-C to stop them"
wait "${pids[0]}"
