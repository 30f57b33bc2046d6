#!/usr/bin/env bash
# Installs what is missing, builds and runs the tests with Qt's offscreen platform. Each phase prints
# its wall time (docs/benchmarks.md, "Test suite timings", keeps the figures). Extra arguments go to
# ctest (e.g. -L unit, -R scaler).
#
# scripts/test.sh          the gate (.ci/run): one AddressSanitizer + UndefinedBehaviorSanitizer build
#                          (build-asan/, LeakSanitizer included) runs every suite but the exhaustive
#                          format sweeps: the layer check, the bad-input catalogue and the UI stress
#                          test (2,000 actions from a new seed, printed) among them. Where nvcc
#                          exists, the CUDA backend and mpx-cuda-check are compiled too (build-cuda/;
#                          running them needs a GPU: docs/gpu.md).
# scripts/test.sh --deep   the gate, then the Release build (build/) with every suite, the exhaustive
#                          2^32 FP16/BF16 sweeps and the 10,000-action stress test included; the
#                          record-buffer thread suite and every preset trained on three threads under
#                          ThreadSanitizer (build-tsan/); the fuzzer
#                          on the readers for MPX_FUZZ_SECONDS (scripts/fuzz.sh). Run it before you
#                          stop whenever you touched formats, threads or readers.
#
# Any sanitizer finding fails. Suppressions, in scripts/sanitize/, are for third-party code only,
# each with its reason. A compiler cache (ccache) is used where installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpx_install_packages "${MPX_TEST_PACKAGES[@]}"
export QT_QPA_PLATFORM=offscreen
# PyTorch was installed above: the export-torch test fails rather than skips when it is missing.
export MPX_REQUIRE_TORCH=1

deep=0
if [ "${1:-}" = "--deep" ]; then
  deep=1
  shift
fi

t0=$SECONDS
phase() { echo "mpx: phase '$1' took $(( SECONDS - t0 )) s"; t0=$SECONDS; }
supp="$MPX_ROOT/scripts/sanitize"

# ---- the gate ----
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
MPX_BUILD_DIR="$MPX_ROOT/build-asan" mpx_build -DMPX_SANITIZE=address,undefined -DMPX_WITH_CUDA=OFF
phase "ASan+UBSan build"
(cd "$MPX_ROOT/build-asan" && MPX_STRESS_ACTIONS="${MPX_STRESS_ACTIONS:-2000}" \
  ctest --output-on-failure --no-tests=error --timeout 1800 -j "$(nproc)" -LE exhaustive "$@") \
  || mpx_die "tests failed under ASan/UBSan (see ctest's output above)"
phase "ASan+UBSan suites"
if command -v nvcc >/dev/null; then
  MPX_BUILD_DIR="$MPX_ROOT/build-cuda" mpx_build -DMPX_WITH_CUDA=ON -DMPX_BUILD_UI=OFF -DMPX_BUILD_TESTS=OFF
  phase "CUDA backend compiled (build-cuda/)"
else
  echo "mpx: skipped compiling the CUDA backend: no nvcc on the PATH"
fi
[ "$deep" = 1 ] || exit 0

# ---- the deep tier ----
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
mpx_build
(cd "$MPX_BUILD_DIR" && ctest --output-on-failure --no-tests=error --timeout 1800 -j "$(nproc)" "$@") \
  || mpx_die "tests failed in the Release build (see ctest's output above)"
phase "Release build and every suite (exhaustive sweeps, 10,000-action stress)"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
tsan="$MPX_ROOT/build-tsan"
if [ ! -f "$tsan/CMakeCache.txt" ]; then
  cmake -S "$MPX_ROOT" -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPX_SANITIZE=thread \
    -DMPX_WITH_CUDA=OFF "${MPX_LAUNCHER_ARGS[@]}" >/dev/null || mpx_die "CMake configure of the TSan build failed"
fi
cmake --build "$tsan" --parallel "$(nproc)" --target ui_test_record_buffer_threads mpx-cli || mpx_die "TSan build failed"
(cd "$tsan" && ctest --output-on-failure --no-tests=error -R record_buffer_threads) \
  || mpx_die "the thread suite failed under TSan (see above)"
# The parallel step: every preset's runs side by side on three threads, GEMMs and loops split.
tsan_out=$(mktemp -d)
for preset in "$MPX_ROOT"/resources/presets/*.json; do
  name=$(basename "$preset" .json)
  "$tsan/bin/mpx-cli" run --config "$name" --steps 150 --threads 3 --quiet --csv "$tsan_out/$name.csv" >/dev/null \
    || mpx_die "mpx-cli run --config $name --threads 3 failed under TSan (see above)"
done
rm -rf "$tsan_out"
phase "TSan build, thread suite and the parallel step of every preset"
"$MPX_ROOT/scripts/fuzz.sh"
phase "fuzzer build and run"
