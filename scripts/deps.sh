#!/usr/bin/env bash
# Installs the Debian packages Rung builds and tests with. Idempotent: it asks
# apt only for what is missing, so a second run costs a second of dpkg.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git curl ca-certificates
  libmicrohttpd-dev libsqlite3-dev sqlite3 libgsl-dev libopenblas-dev libjansson-dev
  libcurl4-openssl-dev libcmocka-dev zlib1g-dev
  libyaml-dev  # YAML experiment specs in the rung client (cli/yaml.c)
  libarchive-dev libssl-dev  # checkpoint tar files and their SHA-256 (worker/ckpt.c, server/ckptstore.c)
  dataset-fashion-mnist  # rung-train's default data, in /usr/share/datasets/fashion-mnist
  python3 python3-optuna python3-venv  # python3-venv: tests/integration/test_python.py installs python/ into a venv
  clang libclang-rt-14-dev clang-format  # fuzzing (libFuzzer) and the format check (scripts/format.sh)
  chromium nodejs  # the dashboard's browser tests (tests/browser) and bench/dashboard
  dpkg-dev systemd  # the .deb (CPack, dpkg-shlibdeps) and its test (dpkg -x, systemd-analyze verify)
  python3-prometheus-client  # tests/integration/test_metrics.py parses /metrics with its parser
  python3-torch python3-pandas  # examples/pytorch and its test (integration_pytorch, skipped without torch); pandas: rung.Experiment.dataframe()
)

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
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
