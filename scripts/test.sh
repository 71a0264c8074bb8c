#!/usr/bin/env bash
# Sets up and runs every test: installs the Debian packages, checks the
# sources' format, builds in build/, runs ctest (unit, integration, browser,
# gpu, fuzz with the plain driver), then every test again in an ASan + UBSan
# build in build-asan/, then the fuzz targets under libFuzzer in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh --tests
# Every C and CUDA source as .clang-format says (clang-format 14).
bash scripts/format.sh --check
# The dashboard's packages (uplot; playwright-core for tests/browser, which
# drives Debian's chromium and never downloads a browser of its own).
(cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
# The Debian packages rungd, rung-worker and rung, into build/ (cpack;
# packaging/README.md). Made again, overwritten, on every run.
cmake --build build --target package
ctest --test-dir build --output-on-failure -j"$jobs"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRUNG_ASAN=ON -DRUNG_UBSAN=ON
cmake --build build-asan -j"$jobs"
# Not again under the sanitizers: the packages (label package), the
# dashboard's JavaScript (browser) and the tests whose own code is Python
# (plain: the Python client's units, rung.compat, the PyTorch example);
# the C they reach runs sanitized in the other tests, and CI's time is
# bounded. Nor the integration files' second run on PostgreSQL (*_pg) and
# the failover test: the same C but db_pg.c, which test_db runs sanitized,
# and standby.c, which integration_postgres does; nor integration_train
# (rung-train training Fashion-MNIST, over two minutes under the
# sanitizers), whose C runs sanitized in test_train, test_ops, test_data
# and test_train_nodes; nor integration_batchjob and integration_slurm, the
# worker in a batch job and `rung launch slurm`, whose C runs sanitized in
# test_batchjob, test_slurm and the other worker files; nor integration_pbt
# (the longest here, two minutes), whose C runs sanitized in test_core_pbt,
# test_ckpt, test_ckptxfer and integration_ckpt_upload.
ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE '^(package|browser|plain)$' \
  -E '^integration_(.*_pg|failover|train|batchjob|slurm|pbt)$'

# The fuzz targets under libFuzzer (clang): only they are built in build-fuzz,
# and each runs for a bounded time (tests/fuzz/CMakeLists.txt), one per core
# at a time. The gcc builds above ran them with the plain driver.
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-fuzz -j"$jobs" --target fuzz_targets
ctest --test-dir build-fuzz -L fuzz --output-on-failure -j"$jobs"
