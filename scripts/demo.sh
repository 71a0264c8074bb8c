#!/usr/bin/env bash
# Sets up and runs the main job: installs the Debian packages it needs
# (scripts/deps.sh without --tests: no PyTorch, Chromium or Optuna, which
# only the tests use), builds, starts rungd on 127.0.0.1:${RUNG_PORT:-8080}
# with its SQLite file rung-demo.db and a local rung-worker (2 CPU slots),
# prints the dashboard's address, submits examples/fmnist-builtin.json (16
# trials of rung-train, the built-in trainer, on Fashion-MNIST: Bayesian
# search, ASHA stops the poor ones early) and follows it with `rung watch`
# until it completes. rungd and the worker keep running until Ctrl-C;
# `--once` stops them when the experiment is done, and says so.
#
# For its test (tests/integration/test_cli.py): RUNG_DEMO_BIN, a folder of
# built programs, skips installing and building; RUNG_DEMO_SPEC is the
# experiment; RUNG_DEMO_DIR the folder of rung-demo.db and rung-demo-worker.
set -euo pipefail
cd "$(dirname "$0")/.."

once=0
case "${1:-}" in
  "") ;;
  --once) once=1 ;;
  *)
    echo "usage: bash scripts/demo.sh [--once]" >&2
    exit 2
    ;;
esac
port=${RUNG_PORT:-8080}
server="http://127.0.0.1:$port"
export RUNG_SERVER="$server"
bin=${RUNG_DEMO_BIN:-build/bin}
spec=${RUNG_DEMO_SPEC:-examples/fmnist-builtin.json}
dir=${RUNG_DEMO_DIR:-.}
db="$dir/rung-demo.db"
workdir="$dir/rung-demo-worker"

if [ -z "${RUNG_DEMO_BIN:-}" ]; then
  bash scripts/deps.sh
  # The charts' library (uPlot) only: web/'s devDependencies are the browser
  # tests' (scripts/test.sh installs them). Kept when already there.
  if [ ! -f web/node_modules/uplot/package.json ]; then
    (cd web && npm ci --omit=dev --no-audit --no-fund)
  fi
  echo "demo: building (build/)"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$(nproc)" >/dev/null
fi

logs=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT

"$bin/rungd" --port "$port" --db "$db" >"$logs/rungd.log" 2>&1 &
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
echo "demo: dashboard: $server/ (open it now: it lives while the demo runs)"

"$bin/rung-worker" --gpus none --cpu-slots 2 --workdir "$workdir" >"$logs/worker.log" 2>&1 &
pids+=($!)
echo "demo: rung-worker started (2 CPU slots, trial folders in $workdir/trials/)"

id=$("$bin/rung" submit -q "$spec")
echo "demo: submitted experiment $id ($spec)"
"$bin/rung" watch "$id"
if [ "$once" = 1 ]; then
  # Stopped before it is said, so no address printed is a dead one.
  cleanup
  trap - EXIT
  echo "demo: done; rungd and the worker are stopped, and $server/ with them."
  echo "demo: the results stay in $db: $bin/rungd --port $port --db $db"
  echo "demo: serves them again, then $bin/rung export $id writes the trials as CSV"
  exit 0
fi
echo "demo: CSV: $bin/rung export $id  (or $server/api/v1/experiments/$id/trials.csv)"
echo "demo: dashboard: $server/ (rungd and the worker keep running; press Ctrl-C to stop them)"
wait "${pids[0]}"
