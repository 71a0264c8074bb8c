#!/usr/bin/env bash
# The trainer benchmark, rung-train's CPU backend against PyTorch in the same
# run (bench/README.md, section 4): Fashion-MNIST, MLP 784-512-256-10, ReLU,
# softmax cross-entropy, SGD momentum 0.9, float32.
#
#  1. kernels: OpenBLAS's default core (OPENBLAS_CORETYPE unset, asked of
#     libopenblas from Python) and the core rung-train picks from cpuid
#     (parsed from its stderr with OPENBLAS_CORETYPE unset); what BLAS
#     PyTorch's Linear runs, from inside a PyTorch process.
#  2. samples/s, batch 64 / 256 / 1024, 1 and 2 threads: rung-train (its
#     chosen core; also OpenBLAS's default core, like with like) and PyTorch
#     with the default core and with rung-train's core. One epoch over the
#     60,000 training samples is one figure; each run does one warm-up epoch
#     and TRAINER_EPOCHS timed ones, every row runs TRAINER_REPEATS times (in
#     rounds over all rows), and the table shows the BEST timed epoch of the
#     row's runs, for both tools alike: on a VM, two-thread figures vary by
#     10-15 % from one process to the next even on an idle host.
#     rung-train's figure is its own samples_per_s (the epoch's training
#     steps; data loading and validation excluded); PyTorch's is timed the
#     same way by bench/torch_trainer.py (pre-loaded tensors, shuffled
#     before the clock starts, no DataLoader). rung-train gathers each
#     batch's rows inside its timed steps (a few % of a step), PyTorch takes
#     a slice of the shuffled tensor: if anything, that favours PyTorch.
#  3. the GEMM share: the GEMMs of one step alone through OpenBLAS sgemm on
#     the same shapes (build/bin/gemm_share), as a samples/s bound, and each
#     tool's samples/s as a share of it.
#  4. data-parallel efficiency at batch 256, rung-train's core: rung-train
#     {"ranks": 2, "threads": 1} against {"ranks": 1, "threads": 2}, and
#     PyTorch DDP on gloo, 2 processes x 1 thread, against 1 process x 2
#     threads; the pairs run one after the other, TRAINER_REPEATS rounds.
#  5. accuracy at lr 0.05, batch 256, on the 10,000 test samples:
#     rung-train runs of 1, 5 and 10 epochs ("val_samples": 0 reports the
#     test set as val_*; rung-train's learning rate follows a cosine over
#     the run's epochs), with the per-epoch figures of the 10-epoch run, and
#     PyTorch at a constant learning rate, after each of 10 epochs.
# Each rung-train and PyTorch process runs under a small wrapper that prints
# its peak resident set (getrusage of the waited-for child), so the memory of
# the two tools is measured in the same run (bench/README.md section 4).
# Then the target lines of bench/README.md section 5 and the reference figures.
#
# Every process gets its environment set here, whatever the shell has:
# OPENBLAS_CORETYPE unset (default core) or set (a chosen core),
# OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = MKL_NUM_THREADS = the threads of
# the row, OMP_WAIT_POLICY = TRAINER_OMP_WAIT_POLICY (PASSIVE: libgomp's
# spin-waiting makes PyTorch's 2 threads slower than 1 on 2 cores; rung-train
# has no OpenMP, it gets the same setting), CUDA_VISIBLE_DEVICES empty (the
# CPU backend), and none of the RUNG_* variables of a worker's trial.
# The host may be shared: each figure comes with the CPU time other
# processes took during its run ("other", in cores, from /proc/stat less
# this script's children); a timing run during which others took more than
# TRAINER_OTHER_MAX cores runs again (TRAINER_RETRIES times at most) and the
# quietest run is kept; figures still over it are marked *.
#
# Usage: bash bench/trainer.sh
# About 5 minutes on 2 idle cores; up to about 10 on a busy host (retries).
# Knobs (environment): TRAINER_BATCHES (64,256,1024), TRAINER_THREADS (1,2),
# TRAINER_EPOCHS (3 timed epochs after 1 warm-up), TRAINER_RUNG_DEFAULT_CORE
# (1: also run rung-train on OpenBLAS's default core; 0 skips),
# TRAINER_GEMM (1), TRAINER_DP (1), TRAINER_ACCURACY (1; 0 skips the
# accuracy runs, about a minute), TRAINER_ACC_THREADS (2),
# TRAINER_OMP_WAIT_POLICY (PASSIVE; empty leaves it unset), TRAINER_REPEATS
# (2), TRAINER_RETRIES (1), TRAINER_OTHER_MAX (0.25 cores),
# TRAINER_TIMEOUT_S (300, per process), RUNG_BUILD (build directory, default
# build/; rung-train and gemm_share are built there when missing). Exit
# status 1 when rung-train cannot run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
TRAIN=$BUILD/bin/rung-train
GEMM=$BUILD/bin/gemm_share
PEER_PY=/usr/bin/python3
PEER=$ROOT/bench/torch_trainer.py
BATCHES=${TRAINER_BATCHES:-64,256,1024}
THREADS=${TRAINER_THREADS:-1,2}
EPOCHS=${TRAINER_EPOCHS:-3}
RUNG_DEFAULT_CORE=${TRAINER_RUNG_DEFAULT_CORE:-1}
DO_GEMM=${TRAINER_GEMM:-1}
DO_DP=${TRAINER_DP:-1}
DO_ACC=${TRAINER_ACCURACY:-1}
ACC_THREADS=${TRAINER_ACC_THREADS:-2}
OMP_WAIT=${TRAINER_OMP_WAIT_POLICY-PASSIVE}
TIMEOUT_S=${TRAINER_TIMEOUT_S:-300}
RETRIES=${TRAINER_RETRIES:-1}
REPEATS=${TRAINER_REPEATS:-2}
OTHER_MAX=${TRAINER_OTHER_MAX:-0.25}
DP_BATCH=256
ACC_BATCH=256
ACC_LR=0.05

TMP=$(mktemp -d "${TMPDIR:-/tmp}/trainer_bench.XXXXXX")
MANIFEST=$TMP/manifest.txt
: >"$MANIFEST"
# Runs its arguments and then prints "peak_rss_kib N" (the child's peak
# resident set, in KiB) on stderr; a signal to it goes on to the child.
PEAK=$TMP/peak_rss.py
cat >"$PEAK" <<'PY'
import resource, signal, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda s, _: child.send_signal(s))
rc = child.wait()
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("peak_rss_kib %d" % peak, file=sys.stderr, flush=True)
sys.exit(rc if rc >= 0 else 128 - rc)
PY
CHILD_PID=""
NOTES=()
T_START=$(date +%s)

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $CHILD_PID ]]; then
        kill -TERM "$CHILD_PID" 2>/dev/null || true
        wait "$CHILD_PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

note() {
    NOTES+=("$*")
    echo "NOTE: $*"
}

for v in EPOCHS RUNG_DEFAULT_CORE DO_GEMM DO_DP DO_ACC ACC_THREADS TIMEOUT_S RETRIES \
    REPEATS; do
    if [[ ! ${!v} =~ ^[0-9]+$ ]]; then
        echo "trainer.sh: $v must be a whole number, not '${!v}'" >&2
        exit 2
    fi
done
for v in BATCHES THREADS; do
    if [[ ! ${!v} =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
        echo "trainer.sh: TRAINER_$v must be a comma-separated list of positive numbers," \
            "not '${!v}'" >&2
        exit 2
    fi
done
if ((EPOCHS < 1 || ACC_THREADS < 1 || REPEATS < 1)); then
    echo "trainer.sh: TRAINER_EPOCHS, TRAINER_ACC_THREADS and TRAINER_REPEATS must be at" \
        "least 1" >&2
    exit 2
fi
if [[ ! $OTHER_MAX =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
    echo "trainer.sh: TRAINER_OTHER_MAX must be a number of cores, not '$OTHER_MAX'" >&2
    exit 2
fi
IFS=, read -r -a BATCH_LIST <<<"$BATCHES"
IFS=, read -r -a THREAD_LIST <<<"$THREADS"

# ---- measuring a process, and what else ran meanwhile ----

# CPU ticks of the whole machine: "busy total" (steal counts as busy: the
# hypervisor ran someone else).
cpu_ticks() {
    local cpu user nice sys idle iow irq sirq steal rest
    read -r cpu user nice sys idle iow irq sirq steal rest </proc/stat
    echo "$((user + nice + sys + irq + sirq + steal)) $((user + nice + sys + idle + iow + irq + \
        sirq + steal))"
}

# CPU seconds of this shell's waited-for children (user + system), in
# ticks, into CHILD_TICKS. `times` runs in this shell, not in a $(...)
# subshell, whose children are not this shell's.
HZ=$(getconf CLK_TCK)
CHILD_TICKS=0
child_ticks() {
    local u s
    times >"$TMP/times"
    { read -r _ _; read -r u s; } <"$TMP/times"
    CHILD_TICKS=$(awk -v u="$u" -v s="$s" -v hz="$HZ" 'function sec(t,  m) {
        m = index(t, "m"); return substr(t, 1, m - 1) * 60 + substr(t, m + 1, length(t) - m - 1) }
        BEGIN { printf "%d\n", (sec(u) + sec(s)) * hz }')
}

NCPU=$(nproc)
LAST_OTHER=0
LAST_RC=0

# Runs "$@" with output to $1 under the time limit, in the background so
# that a signal runs the trap at once; sets LAST_RC and LAST_OTHER (cores
# that other processes used meanwhile).
run_measured() {
    local out=$1 rc=0 b0 t0 c0 b1 t1 c1
    shift
    read -r b0 t0 <<<"$(cpu_ticks)"
    child_ticks
    c0=$CHILD_TICKS
    timeout --kill-after=10 "$TIMEOUT_S" "$@" >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || rc=$?
    CHILD_PID=""
    read -r b1 t1 <<<"$(cpu_ticks)"
    child_ticks
    c1=$CHILD_TICKS
    LAST_OTHER=$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v c=$((c1 - c0)) -v n="$NCPU" \
        'BEGIN { o = t > 0 ? (b - c) / t * n : 0; if (o < 0) o = 0; printf "%.2f", o }')
    LAST_RC=$rc
    return 0
}

# Runs "$@" into a new file under $TMP, and again, up to RETRIES more times,
# while other processes took more than OTHER_MAX cores during the run; keeps
# the quietest run: RUN_OUT, LAST_OTHER, LAST_RC. A host shared with other
# jobs gives figures that say more about them than about the programs.
RUN_N=0
run_quiet() {
    local i out best_out="" best_other="" best_rc=0
    for ((i = 0; i <= RETRIES; i++)); do
        out=$TMP/run$((++RUN_N)).out
        run_measured "$out" "$@"
        if [[ -z $best_out ]] || awk -v a="$LAST_OTHER" -v b="$best_other" \
            'BEGIN { exit !(a < b) }'; then
            best_out=$out
            best_other=$LAST_OTHER
            best_rc=$LAST_RC
        fi
        ((LAST_RC == 0)) || break
        awk -v a="$best_other" -v m="$OTHER_MAX" 'BEGIN { exit !(a > m) }' || break
        if ((i < RETRIES)); then
            echo "    (other processes took $LAST_OTHER cores during that run: once more)"
        fi
    done
    RUN_OUT=$best_out
    LAST_OTHER=$best_other
    LAST_RC=$best_rc
}

# The environment of every process: ENVCMD=(env ...) for a core ("" =
# OpenBLAS's default: the variable unset) and a thread count.
set_env() {
    local core=$1 t=$2
    ENVCMD=(env -u OPENBLAS_CORETYPE -u RUNG_TRAIN_CORE_PICKED -u RUNG_CONFIG -u RUNG_TRAINABLE
        -u RUNG_TRIAL_DIR -u RUNG_RESUME_STEP -u OMP_WAIT_POLICY
        OPENBLAS_NUM_THREADS="$t" OMP_NUM_THREADS="$t" MKL_NUM_THREADS="$t"
        CUDA_VISIBLE_DEVICES= GLOO_SOCKET_IFNAME=lo)
    [[ -n $core ]] && ENVCMD+=(OPENBLAS_CORETYPE="$core")
    [[ -n $OMP_WAIT ]] && ENVCMD+=(OMP_WAIT_POLICY="$OMP_WAIT")
    return 0
}

# "a/b/c" of the samples_per_s of rung-train's @rung lines in a file.
rung_sps() {
    grep '^@rung ' "$1" 2>/dev/null | sed -n 's/.*"samples_per_s": \([0-9.e+]*\).*/\1/p' |
        awk '{printf "%s%.0f", (NR > 1 ? "/" : ""), $1}'
}

# One rung-train run: tag, core, threads, ranks, batch, epochs.
rung_run() {
    local tag=$1 core=$2 t=$3 ranks=$4 b=$5 epochs=$6 out logged
    set_env "$core" "$t"
    local cfg="{\"batch_size\": $b, \"epochs\": $epochs, \"val_samples\": 0, \"threads\": $t,"
    cfg+=" \"ranks\": $ranks, \"lr\": $ACC_LR, \"momentum\": 0.9, \"seed\": 0}"
    local s0=$SECONDS
    run_quiet "${ENVCMD[@]}" "${PEAK_CMD[@]}" "$TRAIN" --config "$cfg"
    out=$RUN_OUT
    logged=$(sed -n 's/^rung-train: OpenBLAS core \([^ ]*\) .*/\1/p' "$out" | tail -n 1)
    echo "$tag rung $b $t $ranks ${core:-default} ${logged:-?} $LAST_OTHER $LAST_RC $out" \
        >>"$MANIFEST"
    printf '  rung-train %-9s batch %4d, %d rank(s) x %d thread(s), core %-10s %s samples/s' \
        "$tag" "$b" "$ranks" "$t" "${logged:-?}" "$(rung_sps "$out")"
    printf ' (%ds, other load %s cores)\n' $((SECONDS - s0)) "$LAST_OTHER"
    if ((LAST_RC != 0)); then
        note "rung-train $tag batch $b ${ranks}x$t failed (exit $LAST_RC):" \
            "$(grep -v '^@rung' "$out" | tail -n 3 | tr '\n' ' ' | cut -c1-400)"
    elif [[ -n $core && $logged != "$core" ]]; then
        note "rung-train $tag was given OPENBLAS_CORETYPE=$core but runs core '${logged:-?}'"
    fi
}

# One torch_trainer.py process: tag, core ("" = default), threads, mode, args.
torch_run() {
    local tag=$1 core=$2 t=$3
    shift 3
    local out
    set_env "$core" "$t"
    local s0=$SECONDS
    run_quiet "${ENVCMD[@]}" "${PEAK_CMD[@]}" "$PEER_PY" "$PEER" "$@" --threads "$t"
    out=$RUN_OUT
    echo "$tag torch - $t 1 ${core:-default} - $LAST_OTHER $LAST_RC $out" >>"$MANIFEST"
    local line what="samples/s"
    line=$(grep '^{' "$out" |
        sed -n 's/.*"batch": \([0-9]*\).*"epochs_sps": \[\([^]]*\)\].*/b\1: \2/p' |
        awk -F': ' '{n = split($2, a, ", "); s = $1 ":"; for (i = 1; i <= n; i++)
            s = s sprintf("%s%.0f", (i > 1 ? "/" : " "), a[i])
            printf "%s%s", (NR > 1 ? ", " : ""), s}')
    if [[ -z $line ]]; then
        what="test accuracy by epoch"
        line=$(grep '^{' "$out" | sed -n 's/.*"test_acc": \([0-9.]*\).*/\1/p' |
            awk '{printf "%s%.4f", (NR > 1 ? "/" : ""), $1}')
    fi
    printf '  pytorch    %-9s %d thread(s), core %-10s %s %s (%ds, other load %s cores)\n' \
        "$tag" "$t" "${core:-default}" "${line:-n/a}" "$what" $((SECONDS - s0)) "$LAST_OTHER"
    if ((LAST_RC != 0)); then
        note "torch_trainer.py $tag ($*) failed (exit $LAST_RC): $(tail -n 3 "$out" |
            tr '\n' ' ' | cut -c1-400)"
    fi
}

echo "== trainer: rung-train's CPU backend against PyTorch (bench/README.md section 4) =="
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
echo "host: $NCPU cores, $cpu; load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "batches $BATCHES, threads $THREADS; each figure: the best of $EPOCHS timed epochs over" \
    "the training set (after 1 warm-up epoch) in each of $REPEATS runs"
echo "every process: OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = MKL_NUM_THREADS = its threads," \
    "OMP_WAIT_POLICY=${OMP_WAIT:-unset}, OPENBLAS_CORETYPE set per row (the shell has" \
    "${OPENBLAS_CORETYPE:-none}, not used); inherited: OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}"

# ---- builds ----
missing=()
[[ -x $TRAIN ]] || missing+=(rung-train)
((DO_GEMM == 0)) || [[ -x $GEMM ]] || missing+=(gemm_share)
if ((${#missing[@]} > 0)); then
    echo
    echo "# building ${missing[*]} in $BUILD"
    run_measured "$TMP/build.out" cmake -S "$ROOT" -B "$BUILD"
    if ((LAST_RC != 0)); then
        note "configuring $BUILD failed (exit $LAST_RC); trying again with -DRUNG_CUDA=OFF: " \
            "$(grep -m1 -A2 'CMake Error' "$TMP/build.out" | tr '\n' ' ' | cut -c1-300)"
        run_measured "$TMP/build.out" cmake -S "$ROOT" -B "$BUILD" -DRUNG_CUDA=OFF
    fi
    TIMEOUT_S=$((TIMEOUT_S > 900 ? TIMEOUT_S : 900)) run_measured "$TMP/build2.out" \
        cmake --build "$BUILD" -j"$NCPU" --target "${missing[@]}"
    if ((LAST_RC != 0)); then
        tail -n 20 "$TMP/build2.out"
    fi
fi
if [[ ! -x $TRAIN ]]; then
    note "no $TRAIN; build it with: cmake -S . -B build && cmake --build build --target rung-train"
    exit 1
fi
if ((DO_GEMM == 1)) && [[ ! -x $GEMM ]]; then
    note "no $GEMM: the GEMM share is not measured"
    DO_GEMM=0
fi

# ---- peak memory ----
PEAK_CMD=()
if [[ -x $PEER_PY ]]; then
    PEAK_CMD=("$PEER_PY" "$PEAK")
else
    note "no $PEER_PY: peak RSS is not measured"
fi

# ---- PyTorch ----
TORCH_OK=1
if [[ ! -x $PEER_PY ]]; then
    note "no $PEER_PY: PyTorch is not measured"
    TORCH_OK=0
elif ! "$PEER_PY" -c 'import torch' 2>/dev/null; then
    if (($(id -u) == 0)) && command -v apt-get >/dev/null; then
        echo "# $PEER_PY cannot import torch: installing Debian's python3-torch"
        TIMEOUT_S=900 run_measured "$TMP/apt.out" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y python3-torch
        tail -n 2 "$TMP/apt.out"
    fi
    if ! "$PEER_PY" -c 'import torch' 2>/dev/null; then
        note "peer not found: $PEER_PY cannot import torch (install Debian's python3-torch:" \
            "apt-get install python3-torch, as root); rung-train measured alone"
        TORCH_OK=0
    fi
fi

# ---- kernels ----
echo
echo "# kernels"
set_env "" 1
CORE_DEFAULT=$("${ENVCMD[@]}" "$PEER_PY" -c '
import ctypes
for name in ("libopenblas.so.0", "libblas.so.3"):
    try:
        lib = ctypes.CDLL(name)
        lib.openblas_get_corename.restype = ctypes.c_char_p
        print(lib.openblas_get_corename().decode())
        break
    except (OSError, AttributeError):
        continue
' 2>/dev/null || true)
run_measured "$TMP/probe.out" "${ENVCMD[@]}" "$TRAIN" --config \
    '{"epochs": 1, "train_samples": 512, "val_samples": 0, "batch_size": 256}'
CORE_CHOSEN=$(sed -n 's/^rung-train: OpenBLAS core \([^ ]*\) .*/\1/p' "$TMP/probe.out" | tail -n 1)
echo "OpenBLAS's default core (OPENBLAS_CORETYPE unset): ${CORE_DEFAULT:-unknown}"
echo "rung-train, OPENBLAS_CORETYPE unset: $(grep -m1 '^rung-train: OpenBLAS core' \
    "$TMP/probe.out" || echo "no core logged (exit $LAST_RC)")"
if [[ -z $CORE_CHOSEN ]]; then
    note "rung-train logged no OpenBLAS core: $(tail -n 3 "$TMP/probe.out" | tr '\n' ' ' |
        cut -c1-300)"
    exit 1
fi
if [[ -z $CORE_DEFAULT ]]; then
    note "could not ask libopenblas for its default core; rung-train is not run on it"
    RUNG_DEFAULT_CORE=0
fi
if [[ $CORE_DEFAULT == "$CORE_CHOSEN" ]]; then
    echo "(the two are the same core: the default table repeats the chosen one)"
    RUNG_DEFAULT_CORE=0
fi
if ((TORCH_OK == 1)); then
    for k in default chosen; do
        core=""
        [[ $k == chosen ]] && core=$CORE_CHOSEN
        set_env "$core" 2
        run_measured "$TMP/info_$k.out" "${ENVCMD[@]}" "$PEER_PY" "$PEER" info --threads 2
        echo "info $k torch - 2 1 ${core:-default} - $LAST_OTHER $LAST_RC $TMP/info_$k.out" \
            >>"$MANIFEST"
        if ((LAST_RC != 0)); then
            note "torch_trainer.py info failed: $(tail -n 3 "$TMP/info_$k.out" | tr '\n' ' ' |
                cut -c1-300)"
        fi
    done
    "$PEER_PY" - "$TMP/info_default.out" "$TMP/info_chosen.out" <<'PY' || true
import json, sys
for path, label in zip(sys.argv[1:], ("OPENBLAS_CORETYPE unset", "OPENBLAS_CORETYPE=chosen")):
    try:
        info = next(json.loads(l) for l in open(path) if l.startswith("{"))
    except (OSError, StopIteration, ValueError):
        continue
    if label.endswith("unset"):
        print(f"PyTorch {info['torch']}: build settings {info['settings']}; "
              f"MKL-DNN (oneDNN) available: {info['mkldnn_available']}")
        print("  mapped: " + ", ".join(info["libs"]))
    sg = info["openblas_sgemm_gflops"]
    print(f"  {label}: OpenBLAS core {info['core']}, {info['openblas_threads']} OpenBLAS "
          f"thread(s), torch threads {info['torch_threads']}; Linear 256x784 -> 512: "
          f"{info['linear_gflops']:.0f} GFLOP/s, OpenBLAS sgemm in the same process: "
          + ("n/a" if sg is None else f"{sg:.0f} GFLOP/s"))
    if info["linear_via_openblas"]:
        print("    -> Linear runs at OpenBLAS's speed for this core: its GEMMs go through "
              "OpenBLAS, so 'same kernel' is the same GEMM code")
    else:
        print("    -> Linear does NOT run at OpenBLAS's speed: PyTorch's GEMMs may not go through "
              "OpenBLAS (oneDNN or its own), so 'same kernel' means the same "
              "OPENBLAS_CORETYPE setting only")
PY
fi

# ---- samples/s ----
echo
echo "# samples/s (warm-up epoch, then $EPOCHS timed; per run: the timed epochs)"
for ((rep = 1; rep <= REPEATS; rep++)); do
    echo " round $rep of $REPEATS"
    for t in "${THREAD_LIST[@]}"; do
        for b in "${BATCH_LIST[@]}"; do
            rung_run speed "$CORE_CHOSEN" "$t" 1 "$b" $((EPOCHS + 1))
            if ((RUNG_DEFAULT_CORE == 1)); then
                rung_run speed "$CORE_DEFAULT" "$t" 1 "$b" $((EPOCHS + 1))
            fi
        done
        if ((TORCH_OK == 1)); then
            torch_run speed "" "$t" speed --batches "$BATCHES" --epochs "$EPOCHS"
            torch_run speed "$CORE_CHOSEN" "$t" speed --batches "$BATCHES" --epochs "$EPOCHS"
        fi
    done
done

# ---- GEMM share ----
if ((DO_GEMM == 1)); then
    echo
    echo "# GEMMs of one step alone (gemm_share), core $CORE_CHOSEN"
    for ((rep = 1; rep <= REPEATS; rep++)); do
        echo " round $rep of $REPEATS"
        for t in "${THREAD_LIST[@]}"; do
            for layout in rung torch; do
                set_env "$CORE_CHOSEN" "$t"
                big=()
                [[ $layout == rung ]] && big=(--big)
                run_quiet "${ENVCMD[@]}" "$GEMM" --batches "$BATCHES" --threads "$t" \
                    --layout "$layout" "${big[@]}"
                echo "gemm gemm - $t 1 $CORE_CHOSEN - $LAST_OTHER $LAST_RC $RUN_OUT" >>"$MANIFEST"
                grep -v '^{' "$RUN_OUT" | sed 's/^/  /'
                echo "  (other load $LAST_OTHER cores)"
                ((LAST_RC == 0)) || note "gemm_share failed (exit $LAST_RC)"
            done
        done
        if ((DO_DP == 1)); then
            set_env "$CORE_CHOSEN" 1
            run_quiet "${ENVCMD[@]}" "$GEMM" --batches "$DP_BATCH" --threads 1 --ranks 2
            echo "gemm gemm - 1 2 $CORE_CHOSEN - $LAST_OTHER $LAST_RC $RUN_OUT" >>"$MANIFEST"
            grep -v '^{' "$RUN_OUT" | sed 's/^/  /'
            echo "  (other load $LAST_OTHER cores)"
        fi
    done
fi

# ---- data-parallel efficiency ----
if ((DO_DP == 1)); then
    echo
    echo "# data parallel at batch $DP_BATCH, core $CORE_CHOSEN: 1 x 2 threads, then 2 x 1 thread"
    DDP_OK=1
    for ((rep = 1; rep <= REPEATS; rep++)); do
        echo " round $rep of $REPEATS"
        rung_run dp "$CORE_CHOSEN" 2 1 "$DP_BATCH" $((EPOCHS + 1))
        rung_run dp "$CORE_CHOSEN" 1 2 "$DP_BATCH" $((EPOCHS + 1))
        if ((TORCH_OK == 1)); then
            torch_run dp "$CORE_CHOSEN" 2 speed --batches "$DP_BATCH" --epochs "$EPOCHS"
            # Two DDP processes, gloo over loopback, a file:// rendezvous of its
            # own per attempt; rank 1's output (errors only) joins rank 0's.
            ((DDP_OK == 1)) || continue
            set_env "$CORE_CHOSEN" 1
            s0=$SECONDS
            # shellcheck disable=SC2016 # expanded by the inner bash
            run_quiet bash -c '"$@" --rank 1 --init "file://$0.$$" & p=$!
                "$@" --rank 0 --init "file://$0.$$"; rc=$?; wait $p || rc=$?; exit $rc' \
                "$TMP/ddp_rendezvous" "${ENVCMD[@]}" "$PEER_PY" "$PEER" ddp --world 2 \
                --batches "$DP_BATCH" --epochs "$EPOCHS" --threads 1
            echo "dp torch-ddp - 1 2 $CORE_CHOSEN - $LAST_OTHER $LAST_RC $RUN_OUT" >>"$MANIFEST"
            sps=$(grep '^{' "$RUN_OUT" | sed -n 's/.*"epochs_sps": \[\([^]]*\)\].*/\1/p' |
                awk -F', ' '{for (i = 1; i <= NF; i++) printf "%s%.0f", (i > 1 ? "/" : ""), $i}')
            printf '  pytorch    ddp       2 processes x 1 thread (gloo), core %-10s %s samples/s' \
                "$CORE_CHOSEN" "${sps:-n/a}"
            printf ' (%ds, other load %s cores)\n' $((SECONDS - s0)) "$LAST_OTHER"
            if ((LAST_RC != 0)) || [[ -z $sps ]]; then
                note "PyTorch DDP did not run (exit $LAST_RC): $(grep -m2 -E 'error|Error' \
                    "$RUN_OUT" | tr '\n' ' ' | cut -c1-400)"
                DDP_OK=0
            fi
        fi
    done
fi

# ---- accuracy ----
if ((DO_ACC == 1)); then
    echo
    echo "# accuracy: batch $ACC_BATCH, lr $ACC_LR, test set, $ACC_THREADS thread(s)," \
        "core $CORE_CHOSEN (TRAINER_ACCURACY=0 skips)"
    retries=$RETRIES
    RETRIES=0 # figures of accuracy do not depend on the host's load
    for e in 10 1 5; do
        rung_run "acc$e" "$CORE_CHOSEN" "$ACC_THREADS" 1 "$ACC_BATCH" "$e"
    done
    if ((TORCH_OK == 1)); then
        torch_run acc "$CORE_CHOSEN" "$ACC_THREADS" accuracy --batches "$ACC_BATCH" \
            --epochs 10 --lr "$ACC_LR"
    fi
    RETRIES=$retries
fi

if ((${#NOTES[@]} > 0)); then
    echo
    echo "== notes (also shown where they happened) =="
    for n in "${NOTES[@]}"; do
        echo "NOTE: $n"
    done
fi

# ---- tables and targets ----
SUMMARY_PY=$PEER_PY
[[ -x $SUMMARY_PY ]] || SUMMARY_PY=$(command -v python3 || true)
if [[ -z $SUMMARY_PY ]]; then
    echo "no python3 to summarize with; the lines above are the results"
    exit 0
fi
"$SUMMARY_PY" - "$MANIFEST" "$CORE_DEFAULT" "$CORE_CHOSEN" "$BATCHES" "$THREADS" "$DP_BATCH" \
    "$ACC_BATCH" "$ACC_LR" "$DO_ACC" "$T_START" "$OTHER_MAX" <<'PY'
import json
import statistics
import sys
import time

(manifest, core_default, core_chosen, batches, threads, dp_batch, acc_batch, acc_lr, do_acc,
 t_start, other_max) = sys.argv[1:]
batches = [int(b) for b in batches.split(",")]
threads = [int(t) for t in threads.split(",")]
dp_batch, acc_batch = int(dp_batch), int(acc_batch)
# cores other processes used during a run, above which a figure is flagged
OTHER_WARN = float(other_max)

runs = []
for line in open(manifest):
    f = line.split()
    if len(f) != 10:
        continue
    tag, tool, batch, t, ranks, core, logged, other, rc, path = f
    runs.append(dict(tag=tag, tool=tool, batch=None if batch == "-" else int(batch),
                     threads=int(t), ranks=int(ranks), core=core,
                     logged=logged, other=float(other), rc=int(rc), path=path))


def rung_epochs(path):
    out = []
    try:
        for text in open(path):
            if text.startswith("@rung "):
                try:
                    out.append(json.loads(text[6:]))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def json_lines(path):
    out = []
    try:
        for text in open(path):
            if text.startswith("{"):
                try:
                    out.append(json.loads(text))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def peak_mib(path):
    """The process's peak RSS in MiB (the wrapper's last line), or None."""
    peak = None
    try:
        for text in open(path):
            if text.startswith("peak_rss_kib "):
                peak = int(text.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return peak


# One JSON object per run: PyTorch's and gemm_share's own, with the run's
# other load added; rung-train's made from its @rung lines.
print()
print("== JSON ==")
for r in runs:
    if r["tool"] == "rung":
        eps = rung_epochs(r["path"])
        sps = [e.get("samples_per_s") for e in eps]
        timed = [v for v in (sps[1:] if r["tag"] in ("speed", "dp") else sps) if v]
        print(json.dumps({"bench": "trainer", "tool": "rung", "kind": r["tag"], "batch": r["batch"],
                          "threads": r["threads"], "ranks": r["ranks"], "core": r["logged"],
                          "epochs_sps": sps, "best_sps": max(timed) if timed else None,
                          "val_acc": [e.get("val_acc") for e in eps], "other": r["other"],
                          "peak_rss_mib": peak_mib(r["path"]), "rc": r["rc"]}))
    else:
        for j in json_lines(r["path"]):
            extra = {"peak_rss_mib": peak_mib(r["path"])} if r["tool"] == "torch" else {}
            print(json.dumps({**j, "other": r["other"], **extra}))


def row_runs(tool, tag, core, b, t, ranks=1):
    """Each run of a row: (the samples/s of its timed epochs, the other load
    during it, the core it reported)."""
    for r in runs:
        if (r["tool"], r["tag"], r["core"], r["threads"]) != (tool, tag, core, t):
            continue
        if tool == "rung":
            if (r["batch"], r["ranks"]) != (b, ranks):
                continue
            eps = rung_epochs(r["path"])[1:]  # the first epoch is the warm-up
            sps = [e["samples_per_s"] for e in eps if e.get("samples_per_s")]
            if sps:
                yield sps, r["other"], r["logged"]
        else:
            for j in json_lines(r["path"]):
                if j.get("kind") == "speed" and j.get("batch") == b and j.get("epochs_sps"):
                    yield j["epochs_sps"], r["other"], j.get("core")


def best_speed(tool, tag, core, b, t, ranks=1):
    """(the best timed epoch of every run of the row, the other load during
    the run that gave it, the core it reported), or Nones."""
    best = (None, None, None)
    for sps, other, reported in row_runs(tool, tag, core, b, t, ranks):
        if best[0] is None or max(sps) > best[0]:
            best = (max(sps), other, reported)
    return best


def rung_speed(tag, core, b, t, ranks=1):
    return best_speed("rung", tag, core, b, t, ranks)[:2]


def torch_speed(tag, core, b, t):
    return best_speed("torch", tag, core, b, t)


def median_speed(tool, core, b, t):
    """The median over the row's runs of each run's median timed epoch: on a
    host whose speed drifts, the best epoch favours the tool whose runs vary
    more, the median does not. None without runs."""
    meds = [statistics.median(sps) for sps, _, _ in row_runs(tool, "speed", core, b, t)]
    return statistics.median(meds) if meds else None


def oth(*vals):
    return ", ".join("-" if v is None else f"{v:.2f}" for v in vals)


def fmt(v, w=8):
    return f"{'n/a':>{w}}" if v is None else f"{v:>{w},.0f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fr(v):
    return "n/a" if v is None else f"{v:.2f}x"


flagged = []


def flag(other):
    if other is not None and other > OTHER_WARN:
        flagged.append(other)
        return "*"
    return " "


print()
print("== samples/s (best timed epoch of the row's runs; 'other' = cores other processes used "
      "during the run that gave it; * = over %.2f) ==" % OTHER_WARN)
tables = [("default", "OpenBLAS's default core (%s)" % (core_default or "?"))]
tables.append((core_chosen, "rung-train's chosen core (%s)" % core_chosen))
rung_default_run = any(r["tool"] == "rung" and r["tag"] == "speed" and r["core"] == core_default
                       for r in runs) and core_default != core_chosen
for key, title in tables:
    print()
    print(f"PyTorch with {title}")
    if key == "default" and rung_default_run:
        print(f"  {'batch':>5} {'thr':>3} | {'rung':>8} {'rung@' + core_default[:9]:>15} | "
              f"{'torch':>8} | {'rung/torch':>10} {'like/like':>10} | other (rung, rung@d, "
              "torch)")
    else:
        print(f"  {'batch':>5} {'thr':>3} | {'rung':>8} | {'torch':>8} | {'rung/torch':>10} | "
              "other (rung, torch)")
    for t in threads:
        for b in batches:
            rs, ro = rung_speed("speed", core_chosen, b, t)
            ts, to, tcore = torch_speed("speed", key, b, t)
            if key == "default" and rung_default_run:
                ds, do = rung_speed("speed", core_default, b, t)
                print(f"  {b:>5} {t:>3} | {fmt(rs)}{flag(ro)}{fmt(ds, 15)}{flag(do)}| "
                      f"{fmt(ts)}{flag(to)}| {fr(ratio(rs, ts)):>10} {fr(ratio(ds, ts)):>10} | "
                      f"{oth(ro, do, to)}")
            else:
                print(f"  {b:>5} {t:>3} | {fmt(rs)}{flag(ro)}| {fmt(ts)}{flag(to)}| "
                      f"{fr(ratio(rs, ts)):>10} | {oth(ro, to)}")
    if key == "default" and rung_default_run:
        print("  rung = rung-train as it runs by itself (its chosen core); like/like = "
              "rung-train on OpenBLAS's default core")
    elif key == "default":
        print("  rung = rung-train as it runs by itself (its chosen core)")

# peak RSS of the speed runs: rung-train per batch and threads (the largest
# of the row's runs), PyTorch per process (one process runs every batch)
rss_rung = {}
rss_torch = {}
for r in runs:
    if r["tag"] != "speed":
        continue
    peak = peak_mib(r["path"])
    if peak is None:
        continue
    if r["tool"] == "rung" and r["core"] == core_chosen:
        key = (r["batch"], r["threads"])
        rss_rung[key] = max(rss_rung.get(key, 0.0), peak)
    elif r["tool"] == "torch" and r["core"] == core_chosen:
        rss_torch[r["threads"]] = max(rss_torch.get(r["threads"], 0.0), peak)
if rss_rung or rss_torch:
    print()
    print("== peak RSS (MiB, the process's largest resident set; speed runs, core "
          f"{core_chosen}) ==")
    for t in threads:
        cells = ", ".join(f"batch {b}: {rss_rung[(b, t)]:.0f}" for b in batches
                          if (b, t) in rss_rung)
        torch_cell = f"{rss_torch[t]:.0f}" if t in rss_torch else "n/a"
        print(f"  {t} thread(s): rung-train {cells or 'n/a'}; PyTorch (all batches in one "
              f"process) {torch_cell}")

# GEMM share
gemm = {}
big = {}
for r in runs:
    if r["tool"] != "gemm":
        continue
    for j in json_lines(r["path"]):
        j["other"] = r["other"]
        if j.get("kind") == "step":
            key = (j["layout"], j["batch"], j["threads"], j["ranks"])
            if key not in gemm or j["samples_per_s"] > gemm[key]["samples_per_s"]:
                gemm[key] = j
        elif j.get("kind") == "big":
            if j["threads"] not in big or j["gflops"] > big[j["threads"]]["gflops"]:
                big[j["threads"]] = j
if gemm:
    print()
    print(f"== GEMM share: the step's GEMMs alone through OpenBLAS sgemm, core {core_chosen}, "
          "as samples/s (best of the runs); share = the tool's samples/s / that bound ==")
    print(f"  {'batch':>5} {'thr':>3} | {'gemm(rung)':>10} {'rung':>8} {'share':>6} | "
          f"{'gemm(torch)':>11} {'torch':>8} {'share':>6} | step GEMMs (rung layout, us)")
    for t in threads:
        for b in batches:
            g = gemm.get(("rung", b, t, 1))
            gt = gemm.get(("torch", b, t, 1))
            rs, _ = rung_speed("speed", core_chosen, b, t)
            ts, _, _ = torch_speed("speed", core_chosen, b, t)
            gs = g["samples_per_s"] if g else None
            gts = gt["samples_per_s"] if gt else None
            shapes = ""
            if g:
                shapes = " ".join(f"{s['op']}:{s['s'] * 1e6:.0f}" for s in g["shapes"])
            print(f"  {b:>5} {t:>3} | {fmt(gs, 10)}{flag(g and g['other'])}{fmt(rs)} "
                  f"{fr(ratio(rs, gs)):>6} | {fmt(gts, 11)}{flag(gt and gt['other'])}{fmt(ts)} "
                  f"{fr(ratio(ts, gts)):>6} | {shapes}")
    g2 = gemm.get(("rung", dp_batch, 1, 2))
    if g2:
        print(f"  2 ranks x 1 thread, batch {dp_batch}: GEMMs alone {g2['samples_per_s']:,.0f} "
              f"samples/s{flag(g2['other'])}")
    for t, j in sorted(big.items()):
        print(f"  sgemm 2048^3, {t} thread(s): {j['gflops']:.0f} GFLOP/s{flag(j['other'])}")

# DP
dp_rung = dp_torch = None
dp_others = []
if any(r["tag"] == "dp" for r in runs):
    print()
    print(f"== data-parallel efficiency, batch {dp_batch}, core {core_chosen}: "
          "2 ranks x 1 thread / 1 rank x 2 threads ==")
    r12, o12 = rung_speed("dp", core_chosen, dp_batch, 2, 1)
    r21, o21 = rung_speed("dp", core_chosen, dp_batch, 1, 2)
    dp_rung = ratio(r21, r12)
    dp_others = [o12, o21]
    t12, to12, _ = torch_speed("dp", core_chosen, dp_batch, 2)
    t21 = to21 = None
    ddp_err = None
    for r in runs:
        if r["tool"] == "torch-ddp":
            for j in json_lines(r["path"]):
                if j.get("kind") == "ddp":
                    if "error" in j:
                        ddp_err = j["error"]
                    elif "best_sps" in j and (t21 is None or j["best_sps"] > t21):
                        t21, to21 = j["best_sps"], r["other"]
    dp_torch = ratio(t21, t12)
    print(f"  {'':<28} {'1 x 2 threads':>14} {'2 x 1 thread':>13} {'efficiency':>10}")
    print(f"  {'rung-train (ranks)':<28} {fmt(r12, 13)}{flag(o12)}{fmt(r21, 12)}{flag(o21)}"
          f"{fr(dp_rung):>10}")
    print(f"  {'PyTorch (DDP, gloo)':<28} {fmt(t12, 13)}{flag(to12)}{fmt(t21, 12)}{flag(to21)}"
          f"{fr(dp_torch):>10}" + (f"   DDP failed: {ddp_err}" if ddp_err else ""))

# accuracy
if do_acc == "1":
    print()
    print(f"== test accuracy, batch {acc_batch}, lr {acc_lr}, SGD momentum 0.9 ==")
    ten = []
    ends = {}
    for r in runs:
        if r["tool"] == "rung" and r["tag"].startswith("acc"):
            eps = rung_epochs(r["path"])
            if r["tag"] == "acc10":
                ten = eps
            if eps:
                ends[int(r["tag"][3:])] = eps[-1]
    tacc = {}
    for r in runs:
        if r["tool"] == "torch" and r["tag"] == "acc":
            for j in json_lines(r["path"]):
                if j.get("kind") == "accuracy":
                    tacc[j["epoch"]] = j
    ref = {1: 0.813, 2: 0.836, 5: 0.870, 10: 0.880}
    print(f"  {'epochs':>6} | {'rung, run of E':>14} | {'rung, epoch E of 10':>19} | "
          f"{'torch, epoch E of 10':>20} | {'ref torch':>9}")

    def acc(e):
        return "n/a" if e is None or e.get("val_acc") is None else f"{e['val_acc']:.4f}"

    for e in (1, 2, 5, 10):
        t = tacc.get(e)
        print(f"  {e:>6} | {acc(ends.get(e)) if e in (1, 5, 10) else '-':>14} | "
              f"{acc(ten[e - 1] if len(ten) >= e else None):>19} | "
              f"{'n/a' if t is None else format(t['test_acc'], '.4f'):>20} | "
              f"{ref.get(e, float('nan')):>9.3f}")
    print("  rung-train's learning rate follows a cosine from lr to 0 over the run's epochs "
          "(a run of E epochs ends annealed);")
    print("  PyTorch's is constant, as in bench/README.md's reference figures.")

print()
print("reference (bench/README.md section 4; another host: Intel family 6 model 207, where "
      "OpenBLAS's default is Prescott):")
print("  sgemm 2048^3, Prescott / SkylakeX, 2 threads: 72 / 342 GFLOP/s (1 thread: 36 / 168)")
print("  GEMMs of one MLP step, batch 256, as samples/s: 28,700 (Prescott) / 114,800 (SkylakeX)")
print("  PyTorch 1.13 MLP, batch 64 / 256 / 1024, SkylakeX: ~28,000 / ~60,000 / ~83,000 "
      "samples/s; batch 256, Prescott: ~17,000-25,000")
print("  PyTorch DDP (gloo) 2 ranks x 1 thread: ~31,000 samples/s (single process, 2 threads: "
      "~63,000), 0.49x")
print("  PyTorch test accuracy, batch 256, lr 0.05, epochs 1 / 2 / 5 / 10: 0.813 / 0.836 / "
      "0.870 / 0.880")
if flagged:
    print()
    print(f"NOTE: {len(flagged)} figure(s) marked * ran while other processes used up to "
          f"{max(flagged):.2f} cores of this host: read them with care")
print()
print(f"run time: {time.time() - float(t_start):.0f} s")
print()


def target(name, value, goal, ok, why=""):
    print(f"target {name}: {value} (goal {goal}) {'ok' if ok else 'short'}{why}")


def busy(*others):
    worst = max((o for o in others if o is not None), default=0.0)
    return (f"; measured while other processes took up to {worst:.2f} cores: not conclusive"
            if worst > OTHER_WARN else "")


rs, ro = rung_speed("speed", core_chosen, 256, 2)
ts, to, _ = torch_speed("speed", core_chosen, 256, 2)
x = ratio(rs, ts)
rm, tm = median_speed("rung", core_chosen, 256, 2), median_speed("torch", core_chosen, 256, 2)
xm = ratio(rm, tm)
median_note = ("" if xm is None else
               f"; medians of the runs: {rm:,.0f} vs {tm:,.0f} samples/s, {xm:.2f}x")
target("trainer_vs_torch_b256_t2_same_kernel",
       "n/a" if x is None else f"ratio {x:.2f}x ({rs:,.0f} vs {ts:,.0f} samples/s, core "
       f"{core_chosen}{busy(ro, to)})", "1.5x", x is not None and x >= 1.5,
       ("" if ts is not None else " (no PyTorch figure)" if rs is not None else
        " (no figures)") + median_note)
g = gemm.get(("rung", 256, 2, 1))
share = ratio(rs, g["samples_per_s"] if g else None)
target("trainer_gemm_share_b256_t2",
       "n/a" if share is None else f"{share:.2f} of the GEMM-only bound ({rs:,.0f} vs "
       f"{g['samples_per_s']:,.0f} samples/s{busy(ro, g['other'])})", "0.95",
       share is not None and share >= 0.95)
worst = max(rss_rung.values()) if rss_rung else None
peer = max(rss_torch.values()) if rss_torch else None
target("trainer_peak_rss_mib",
       "n/a" if worst is None else f"{worst:.0f} (the largest of rung-train's speed runs; "
       + ("no PyTorch figure" if peer is None else f"PyTorch {peer:.0f}") + ")",
       "<= 150", worst is not None and worst <= 150)
target("dp_efficiency_rung", "n/a" if dp_rung is None else f"{dp_rung:.2f}x", "0.9x",
       dp_rung is not None and dp_rung >= 0.9,
       ("" if dp_torch is None else f" (PyTorch DDP here: {dp_torch:.2f}x; reference 0.49x)")
       + (f" ({busy(*dp_others)[2:]})" if busy(*dp_others) else ""))
PY
