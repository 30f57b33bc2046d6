#!/usr/bin/env bash
# Builds the libFuzzer target fuzz/fuzz_readers with clang, ASan and UBSan (build-fuzz/) and runs it
# for a bounded time (MPX_FUZZ_SECONDS, default 60) from the seed corpus in fuzz/corpus. Any crash,
# sanitizer finding or uncaught exception fails it and leaves the input in build-fuzz/artifacts/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpx_install_packages
command -v clang++ >/dev/null || mpx_die "clang++ is needed for libFuzzer (Debian: clang, libclang-rt-dev)"
dir="$MPX_ROOT/build-fuzz"
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$MPX_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DMPX_WITH_CUDA=OFF -DMPX_BUILD_UI=OFF -DMPX_BUILD_TESTS=OFF -DMPX_BUILD_FUZZ=ON \
    -DMPX_SANITIZE=address,undefined ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} \
    >/dev/null || mpx_die "CMake configure of the fuzz build failed"
fi
cmake --build "$dir" --parallel "$(nproc)" --target fuzz_readers || mpx_die "fuzz build failed"
mkdir -p "$dir/corpus" "$dir/artifacts"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# -rss_limit_mb: a state may ask for a large model; the reader must refuse or build it within bounds.
"$dir/bin/fuzz_readers" -max_total_time="${MPX_FUZZ_SECONDS:-60}" -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus" "$MPX_ROOT/fuzz/corpus" \
  || mpx_die "the fuzzer found an input that fails (see build-fuzz/artifacts/)"
