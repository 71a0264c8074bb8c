#!/usr/bin/env bash
# Sets up and runs every test: installs the Debian packages, builds in
# build/, runs ctest (unit and integration), then every test again in an
# ASan + UBSan build in build-asan/.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRUNG_ASAN=ON -DRUNG_UBSAN=ON
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j"$jobs"
