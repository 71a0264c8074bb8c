#!/usr/bin/env bash
# Sets up and runs the main job: installs the Debian packages, builds, starts
# rungd on 127.0.0.1:${RUNG_PORT:-8080} with its SQLite file rung-demo.db,
# submits examples/branin-random.json, runs a local worker (the toy worker of
# examples/, which speaks the pull protocol) until the experiment completes,
# prints the result and the dashboard's address, and keeps rungd running
# until Ctrl-C. `--once` stops rungd when the experiment is done.
set -euo pipefail
cd "$(dirname "$0")/.."

once=0
[ "${1:-}" = "--once" ] && once=1
port=${RUNG_PORT:-8080}
server="http://127.0.0.1:$port"

bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

log=$(mktemp)
build/bin/rungd --port "$port" --db rung-demo.db >"$log" 2>&1 &
rungd=$!
trap 'kill "$rungd" 2>/dev/null; wait "$rungd" 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 50); do
  grep -q "listening on" "$log" && break
  if ! kill -0 "$rungd" 2>/dev/null; then
    cat "$log"
    echo "demo: rungd did not start (is port $port taken? set RUNG_PORT)" >&2
    exit 1
  fi
  sleep 0.1
done
grep "listening on" "$log"

api() { curl -sS -H 'Content-Type: application/json' "$@"; }
exp=$(api -X POST "$server/api/v1/experiments" --data @examples/branin-random.json)
id=$(printf '%s' "$exp" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "demo: submitted experiment $id (examples/branin-random.json)"

python3 examples/toy_worker.py --server "$server" --slots 4 --once
api "$server/api/v1/experiments/$id" | python3 -c '
import json, sys
e = json.load(sys.stdin)
b = e["best"]
print("demo: experiment %d is %s: %s" % (e["id"], e["state"], e["counts"]))
print("demo: best loss %.4f (Branin minimum 0.3979) at x1=%.3f x2=%.3f, trial %d" %
      (b["value"], b["config"]["x1"], b["config"]["x2"], b["trial_id"]))'
echo "demo: CSV at $server/api/v1/experiments/$id/trials.csv"
echo "demo: dashboard at $server/"
if [ "$once" = 1 ]; then
  exit 0
fi
echo "demo: rungd keeps running; press Ctrl-C to stop it"
wait "$rungd"
