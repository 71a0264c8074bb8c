#!/usr/bin/env bash
# LCBench through YAHPO Gym's surrogate network (bench/README.md, "LCBench"):
# exports the data folder's model.onnx, checks the numpy evaluator against
# ONNX Runtime's figures for task 3945 at config_space.json's defaults,
# checks the C evaluator (build/bin/lcbench_eval) against numpy on random
# rows, and measures the C evaluator's evaluations/s.
#
# Usage: bash bench/lcbench.sh [DATA_DIR]     (or LCBENCH_DIR=DATA_DIR)
# DATA_DIR holds model.onnx, config_space.json and encoding.json from YAHPO
# Gym's data (its lcbench/ folder); the repository does not ship it.
# Knobs (environment): RUNG_BUILD (build directory, default build/; the graph
# is exported into RUNG_BUILD/lcbench-graph), LCB_CHECK_ROWS (4000),
# LCB_ORT_NODE_PATH (a node_modules holding onnxruntime-node: then ONNX
# Runtime on model.onnx is checked against numpy on the same random rows).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
DATA=${1:-${LCBENCH_DIR:-}}
PY=/usr/bin/python3
ROWS=${LCB_CHECK_ROWS:-4000}

if [[ -z $DATA || ! -f $DATA/model.onnx || ! -f $DATA/encoding.json ]]; then
    echo "lcbench: needs the LCBench data folder (model.onnx, config_space.json, encoding.json):" >&2
    echo "  bash bench/lcbench.sh DATA_DIR, or LCBENCH_DIR=DATA_DIR." >&2
    echo "  bench/README.md, \"LCBench\", says where to get it (YAHPO Gym's data, lcbench/)." >&2
    exit 2
fi
if ! $PY -c 'import onnx' 2>/dev/null; then
    echo "lcbench: needs python3-onnx (bash scripts/deps.sh --bench)" >&2
    exit 2
fi
if [[ ! -x $BUILD/bin/lcbench_eval ]]; then
    cmake --build "$BUILD" --target lcbench_eval >/dev/null
fi
GRAPH=$BUILD/lcbench-graph
$PY "$ROOT/bench/lcbench_export.py" export "$DATA" "$GRAPH"
echo "== numpy against ONNX Runtime's figures (task 3945, defaults) =="
$PY "$ROOT/bench/lcbench_export.py" sanity "$GRAPH" "$DATA"
echo "== C against numpy =="
$PY "$ROOT/bench/lcbench_export.py" check "$GRAPH" "$ROWS" "$BUILD/bin/lcbench_eval" --graph "$GRAPH" --eval
if [[ -n ${LCB_ORT_NODE_PATH:-} ]]; then
    echo "== ONNX Runtime against numpy =="
    NODE_PATH=$LCB_ORT_NODE_PATH $PY "$ROOT/bench/lcbench_export.py" check "$GRAPH" "$ROWS" \
        node "$ROOT/bench/lcbench_ort.js" "$DATA/model.onnx"
fi
echo "== C evaluator speed (one thread) =="
OPENBLAS_NUM_THREADS=1 "$BUILD/bin/lcbench_eval" --graph "$GRAPH" --speed
