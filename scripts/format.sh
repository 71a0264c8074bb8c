#!/usr/bin/env bash
# Formats the project's C and CUDA sources (*.c *.h *.cu *.cuh under common,
# cli, kernels, sampler, server, worker, tests and bench; build folders and
# node_modules left out) with clang-format 14 and the checked-in
# .clang-format.
#
#   bash scripts/format.sh            reformat every file in place
#   bash scripts/format.sh --check    change nothing; list the files that
#                                     differ and exit 1 if there are any
#   bash scripts/format.sh [--check] FILE...   the same for these files only
#
# clang-format 14 exactly (Debian 12's clang-format package): other versions
# break lines differently, so a check would fail on code that 14 accepts.
# CLANG_FORMAT names another binary of version 14.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
if [[ ${1:-} == --check ]]; then
    check=1
    shift
fi
if [[ ${1:-} == -* ]]; then
    echo "usage: bash scripts/format.sh [--check] [FILE...]" >&2
    exit 2
fi

cf=${CLANG_FORMAT:-}
if [[ -z $cf ]]; then
    for c in clang-format-14 clang-format; do
        if command -v "$c" > /dev/null; then
            cf=$c
            break
        fi
    done
fi
if [[ -z $cf ]]; then
    echo "format.sh: no clang-format found: apt-get install clang-format (version 14)" >&2
    exit 2
fi
version=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [[ $version != 14 ]]; then
    echo "format.sh: $cf is version ${version:-unknown}, not 14; set CLANG_FORMAT" >&2
    exit 2
fi

if [[ ! -f .clang-format ]]; then
    echo "format.sh: no .clang-format at the top of the repository" >&2
    exit 2
fi

files=()
if (($# > 0)); then
    files=("$@")
else
    while IFS= read -r -d '' f; do
        files+=("$f")
    done < <(find common cli kernels sampler server worker tests bench \
        -type d \( -name 'build*' -o -name node_modules \) -prune -o \
        -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
        sort -z)
fi

if ((check == 0)); then
    "$cf" --style=file -i -- "${files[@]}"
    exit 0
fi

differ=0
for f in "${files[@]}"; do
    if ! "$cf" --style=file -- "$f" | cmp -s - "$f"; then
        echo "$f"
        differ=1
    fi
done
if ((differ)); then
    echo "format.sh: the files above differ from clang-format's output; run bash scripts/format.sh" >&2
fi
exit $differ
