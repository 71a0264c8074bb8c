#!/usr/bin/env bash
# Installs the Debian packages Rung needs. Idempotent and non-interactive: it
# asks apt only for what is missing, so a second run costs a second of dpkg.
#
#   bash scripts/deps.sh          what building and running Rung need (the
#                                 demo, scripts/demo.sh): compilers and
#                                 libraries, rung-train's data, npm for the
#                                 dashboard's charts
#   bash scripts/deps.sh --tests  that and what the tests need besides
#                                 (scripts/test.sh): PyTorch, Optuna, pandas,
#                                 Chromium, clang and libFuzzer, the .deb tools
#   bash scripts/deps.sh --bench  that and what only the benchmarks need
#                                 (bench/README.md): python3-onnx, which
#                                 bench/lcbench_export.py reads LCBench's
#                                 surrogate with; no test needs it
#   --list                        prints the packages, one a line, and
#                                 installs nothing
set -euo pipefail

tests=0
bench=0
list=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    --bench) bench=1 ;;
    --list) list=1 ;;
    *)
      echo "usage: bash scripts/deps.sh [--tests] [--bench] [--list]" >&2
      exit 2
      ;;
  esac
done

packages=(
  build-essential cmake pkg-config git ca-certificates
  libmicrohttpd-dev libsqlite3-dev libgsl-dev libopenblas-dev libjansson-dev
  libpq-dev  # PostgreSQL's client library: the store's other database (server/db.h)
  libgnutls28-dev  # rungd's HTTPS certificates (server/http_tls.c), the GnuTLS MHD uses
  libcurl4-openssl-dev zlib1g-dev
  libcmocka-dev  # the unit tests are part of every build (CMakeLists.txt requires cmocka)
  libyaml-dev  # YAML experiment specs in the rung client (cli/yaml.c)
  libarchive-dev libssl-dev  # checkpoint tar files and their SHA-256 (worker/ckpt.c, server/ckptstore.c)
  dataset-fashion-mnist  # rung-train's default data, in /usr/share/datasets/fashion-mnist
  nodejs  # npm (below) for the dashboard's charts (uPlot, web/README.md)
)
if [ "$tests" = 1 ]; then
  packages+=(
    openssl  # tests/integration/test_tls.py makes its CA and certificates
    curl sqlite3  # docs/api.md's examples; sqlite3: the operations tests and docs/operations.md's recovery
    python3 python3-optuna python3-venv  # python3-venv: tests/integration/test_python.py installs python/ into a venv
    clang libclang-rt-14-dev clang-format  # fuzzing (libFuzzer) and the format check (scripts/format.sh)
    chromium  # the dashboard's browser tests (tests/browser) and bench/dashboard
    dpkg-dev systemd  # the .deb (CPack, dpkg-shlibdeps) and its test (dpkg -x, systemd-analyze verify)
    python3-prometheus-client  # tests/integration/test_metrics.py parses /metrics with its parser
    python3-cloudpickle  # a notebook's function as a trainable (rung.Experiment ships it by value)
    python3-yaml  # tests/integration/test_openapi.py reads docs/openapi.yaml
    python3-torch python3-pandas  # examples/pytorch and its test (integration_pytorch, skipped without torch); pandas: rung.Experiment.dataframe()
    podman runc catatonit uidmap slirp4netns fuse-overlayfs busybox-static  # container trials (tests/integration/test_container.py, its image from busybox)
    postgresql-15  # the store on PostgreSQL (label postgres): tests/postgres/cluster.sh runs its own cluster
    slurmctld slurmd slurm-client munge  # rung launch slurm (integration_slurm): tests/slurm/cluster.sh runs its own
  )
fi
if [ "$bench" = 1 ]; then
  packages+=(
    python3-numpy python3-onnx  # bench/lcbench_export.py: LCBench's model.onnx to the graph the evaluators read
    python3-psycopg2  # bench/postgres_load.sh: Optuna's RDB storage on PostgreSQL
  )
fi
if [ "$list" = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm (web/'s packages): Debian's package, unless the nodejs installed brings
# its own (NodeSource's nodejs ships npm and conflicts with Debian's npm).
if ! command -v npm >/dev/null 2>&1; then
  missing+=(npm)
fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: run as root (apt-get needs it)" >&2
    exit 1
  fi
  # postgresql-15 would make and start a cluster of its own on port 5432:
  # the tests run theirs (tests/postgres/cluster.sh), so none is made.
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
  fi
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
