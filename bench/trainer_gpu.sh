#!/usr/bin/env bash
# The CUDA trainer benchmark (bench/README.md, "Trainer on GPUs"):
# rung-train's CUDA backend against PyTorch on the same MLP (784-512-256-10,
# Fashion-MNIST, SGD momentum 0.9, float32), samples/s of an epoch's
# training steps, on 1 GPU and on every GPU there is:
#
#   rung-train --gpus 1 / --gpus N: its own samples_per_s, the best of
#     TRAINER_GPU_EPOCHS epochs after the first (which loads kernels and
#     captures the step's graphs);
#   bench/torch_trainer_gpu.py speed (1 GPU) and ddp (N GPUs, NCCL): the
#     best epoch after a warm-up one, the data on the GPU as rung-train has
#     it.
#
# Each batch of TRAINER_GPU_BATCHES gets a row per tool and GPU count, and
# the ratio rung-train / PyTorch. Prints "Skipped: ..." and exits 0 where
# there is no GPU (nvidia-smi absent or listing none) or no CUDA backend in
# the build; PyTorch rows read "skipped" where torch sees no GPU.
#
# Usage: bash bench/trainer_gpu.sh
# Knobs (environment): TRAINER_GPU_BATCHES (256,1024), TRAINER_GPU_EPOCHS
# (4), RUNG_BUILD (build directory, default build/), TRAINER_GPU_PYTHON
# (python3), TRAINER_GPU_DATA (/usr/share/datasets/fashion-mnist: its IDX
# files for PyTorch; rung-train reads the same folder).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
TRAIN=$BUILD/bin/rung-train
PY=${TRAINER_GPU_PYTHON:-python3}
DATA=${TRAINER_GPU_DATA:-/usr/share/datasets/fashion-mnist}
BATCHES=${TRAINER_GPU_BATCHES:-256,1024}
EPOCHS=${TRAINER_GPU_EPOCHS:-4}

if [[ ! $BATCHES =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ || ! $EPOCHS =~ ^[1-9][0-9]*$ ]]; then
    echo "trainer_gpu.sh: TRAINER_GPU_BATCHES must be a comma-separated list of positive" \
        "numbers and TRAINER_GPU_EPOCHS a positive number" >&2
    exit 2
fi
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [[ ${GPUS:-0} -lt 1 ]]; then
    echo "Skipped: no GPU (nvidia-smi lists none)"
    exit 0
fi
if [[ ! -x $TRAIN ]]; then
    echo "Skipped: $TRAIN not built" >&2
    exit 0
fi
# rung-train says which backend it runs on its stderr's data line.
probe=$("$TRAIN" --config '{"epochs": 1, "train_samples": 2000}' 2>&1 >/dev/null || true)
if ! grep -q "GPU rank" <<<"$probe"; then
    echo "Skipped: this rung-train has no CUDA backend or sees no GPU"
    exit 0
fi
nvidia-smi -L | sed 's/ (UUID.*//'

# The best samples_per_s of epochs 2.. of a rung-train run.
rung_rate() {
    local gpus=$1 batch=$2
    "$TRAIN" --gpus "$gpus" --config "{\"epochs\": $EPOCHS, \"batch_size\": $batch}" \
        2>/dev/null | awk -F'"samples_per_s": ' '/^@rung/ && NR > 1 {
            split($2, a, /[,}]/); if (a[1] + 0 > best) best = a[1] + 0 }
            END { printf "%.0f", best }'
}

torch_rate() {
    local mode=$1 gpus=$2 batch=$3 out
    out=$("$PY" "$ROOT/bench/torch_trainer_gpu.py" "$mode" --gpus "$gpus" --batch "$batch" \
        --epochs $((EPOCHS - 1)) --data "$DATA" 2>/dev/null | grep '^{' | tail -1 || true)
    if [[ $out == *samples_per_s* ]]; then
        sed 's/.*"samples_per_s": \([0-9]*\).*/\1/' <<<"$out"
    else
        echo skipped
    fi
}

printf '\n%-8s %-6s %14s %14s %8s\n' batch gpus rung-train pytorch ratio
IFS=, read -r -a BATCH_LIST <<<"$BATCHES"
for b in "${BATCH_LIST[@]}"; do
    counts=(1)
    if ((GPUS >= 2)); then counts+=("$GPUS"); fi
    for g in "${counts[@]}"; do
        r=$(rung_rate "$g" "$b")
        if ((g == 1)); then t=$(torch_rate speed 1 "$b"); else t=$(torch_rate ddp "$g" "$b"); fi
        ratio=-
        if [[ $t =~ ^[0-9]+$ && $t -gt 0 ]]; then
            ratio=$(awk -v r="$r" -v t="$t" 'BEGIN { printf "%.2f", r / t }')
        fi
        printf '%-8s %-6s %14s %14s %8s\n' "$b" "$g" "$r" "$t" "$ratio"
    done
done
if ((GPUS < 2)); then
    echo "N GPUs: Skipped (one GPU here)"
fi
