# Shared by the benchmark scripts (source it after `set -euo pipefail`):
# a temporary folder removed on any exit, a child run under a time bound
# that a signal interrupts at once, and notes gathered for the summary.
#
#   bench_start NAME   makes $TMP (NAME.XXXXXX) and sets the traps
#   run_bounded OUT SECONDS CMD...   runs CMD under timeout, output to OUT,
#                      showing its lines for a person (not the JSON ones)
#   note TEXT...       prints a NOTE and keeps it in NOTES
#   print_notes        repeats the notes in one block before the summary
#   print_host         the host line: cores, CPU, load average, time
#   print_build BUILD BINARY   which sources BINARY was built from
#   need_daemon NAME   builds rungd and rung-worker ($RUNGD, $WORKER) into
#                      $BUILD when either is missing, or exits naming them

CHILD_PID=""
NOTES=()

bench_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $CHILD_PID ]]; then
        kill -TERM "$CHILD_PID" 2>/dev/null || true
        wait "$CHILD_PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
    exit "$rc"
}

bench_start() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# In the background and waited for, so that a signal to the script runs the
# trap at once rather than after the child ends.
run_bounded() {
    local out=$1 secs=$2 rc=0
    shift 2
    timeout --kill-after=10 "$secs" "$@" >"$out" 2>&1 &
    CHILD_PID=$!
    tail -n +1 -f --pid="$CHILD_PID" "$out" 2>/dev/null | grep --line-buffered -v '^{' || true
    wait "$CHILD_PID" || rc=$?
    CHILD_PID=""
    return "$rc"
}

note() {
    NOTES+=("$*")
    echo "NOTE: $*"
}

print_notes() {
    ((${#NOTES[@]} > 0)) || return 0
    echo
    echo "== notes (also shown where they happened) =="
    local n
    for n in "${NOTES[@]}"; do
        echo "NOTE: $n"
    done
}

print_host() {
    local cpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
    echo "host: $(nproc) cores, $cpu; load average $(cut -d' ' -f1-3 /proc/loadavg);" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# The build folder's source tree, its commit and whether it had changes
# (every command may fail: a build from a tarball has no git).
print_build() {
    local build=$1 binary=$2 src rev=""
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
    if [[ -n $src ]] && git -C "$src" rev-parse --short HEAD >/dev/null 2>&1; then
        rev=" (sources $src at $(git -C "$src" rev-parse --short HEAD)"
        if [[ -n $(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
            rev+=", with uncommitted changes"
        fi
        rev+=")"
    fi
    echo "rungd: $binary$rev"
}

need_daemon() {
    local name=$1 b
    if [[ ! -x $RUNGD || ! -x $WORKER ]]; then
        echo "# building rungd and rung-worker in $BUILD"
        run_bounded "$TMP/build.out" 900 cmake -S "$ROOT" -B "$BUILD" \
            -DCMAKE_BUILD_TYPE=RelWithDebInfo || tail -20 "$TMP/build.out"
        run_bounded "$TMP/build.out" 900 cmake --build "$BUILD" -j2 --target rungd rung-worker ||
            tail -20 "$TMP/build.out"
    fi
    for b in "$RUNGD" "$WORKER"; do
        if [[ ! -x $b ]]; then
            echo "$name: no $b; build it with: cmake -S . -B build && cmake --build build -j2" >&2
            exit 1
        fi
    done
}
